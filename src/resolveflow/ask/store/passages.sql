-- name: passage_document
-- The document that holds a chunk, in the tenant only (another tenant's chunk is not found).
SELECT d.id, d.source, d.external_id, d.kind, d.title, d.url, d.indexed_at
FROM chunks c
JOIN documents d ON d.id = c.document_id AND d.tenant_id = c.tenant_id
WHERE c.tenant_id = %(tenant_id)s AND c.id = %(chunk_id)s
  AND c.mailbox IS NULL  -- mail is read through the mail search only (its mailbox grants)

-- name: passage_chunks
-- Every chunk of a document, in reading order.
SELECT id, ordinal, section, text FROM chunks
WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s AND mailbox IS NULL
ORDER BY ordinal
