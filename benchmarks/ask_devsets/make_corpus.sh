#!/usr/bin/env bash
# Copies the Rust book and the Cargo book from the installed Rust toolchain into two corpus
# folders that hold their content pages only (read_docs_dir follows no link, so these are copies).
# Left out: the old editions' copies (2018-edition/, first-edition/, second-edition/), mdBook's
# whole-book print.html and its toc.html, and redirect stubs (pages that only send the browser to
# another page). Usage: make_corpus.sh OUT_DIR  (makes OUT_DIR/rust-book and OUT_DIR/cargo-book)
set -euo pipefail
out=${1:?usage: make_corpus.sh OUT_DIR}
html=${RUST_DOCS:-$(rustc --print sysroot)/share/doc/rust/html}
copy() {
    local from=$1 to=$2
    rm -rf "$to" && mkdir -p "$to"
    (cd "$from" && find . -name '*.html' \
        -not -path './2018-edition/*' -not -path './first-edition/*' \
        -not -path './second-edition/*' \
        -not -name print.html -not -name toc.html -not -name 404.html -print0) |
    while IFS= read -r -d '' page; do
        if grep -qiE 'http-equiv="refresh"|name="robots" content="noindex' "$from/$page"; then
            continue
        fi
        mkdir -p "$to/$(dirname "$page")"
        cp "$from/$page" "$to/$page"
    done
}
copy "$html/book" "$out/rust-book"
copy "$html/cargo" "$out/cargo-book"
echo "rust-book: $(find "$out/rust-book" -name '*.html' | wc -l) pages," \
    "cargo-book: $(find "$out/cargo-book" -name '*.html' | wc -l) pages"
