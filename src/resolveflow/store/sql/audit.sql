-- name: insert_event
INSERT INTO audit_events (tenant_id, actor, event, subject_type, subject_id, run_id, details,
                          trace_id)
VALUES (%(tenant_id)s, %(actor)s, %(event)s, %(subject_type)s, %(subject_id)s, %(run_id)s,
        %(details)s, %(trace_id)s)

-- name: events_for_subjects
SELECT id, at, actor, event, subject_type, subject_id, run_id, details, trace_id
FROM audit_events
WHERE tenant_id = %(tenant_id)s AND subject_id = ANY(%(subject_ids)s)
ORDER BY id
