-- Removing documents from a tenant's index (`index remove`, `index docs --prune`, the API).

-- name: source_external_ids
SELECT external_id FROM documents
WHERE tenant_id = %(tenant_id)s AND source = %(source)s
ORDER BY external_id

-- name: delete_document_chunks
-- The chunks first, by name, so the term and chunk counters' statement triggers see one DELETE
-- of them (the cascade from documents would do the same, one statement per document row).
DELETE FROM chunks c
USING documents d
WHERE d.tenant_id = %(tenant_id)s AND d.source = %(source)s
  AND d.external_id = ANY(%(external_ids)s)
  AND c.tenant_id = d.tenant_id AND c.document_id = d.id

-- name: delete_documents
DELETE FROM documents
WHERE tenant_id = %(tenant_id)s AND source = %(source)s AND external_id = ANY(%(external_ids)s)
RETURNING external_id
