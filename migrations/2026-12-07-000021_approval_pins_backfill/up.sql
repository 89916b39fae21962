-- Posts approved before approvals pinned what they approved (migration 20) carry no pin, and
-- a later `published` report would mark them "never approved". Each post whose review record
-- holds a person's approving move (into client review, or to approved) gets the pin of what
-- it holds now: its body's fingerprint (the stored matching key, or the same SHA-256 of the
-- body trimmed with its whitespace runs made one space, whitespace as Unicode's White_Space
-- property has it, as Rust's `split_whitespace` does), its body, its media's content hashes in
-- publishing order and its characters' codes.
UPDATE posts p
SET approved_pin = jsonb_build_object(
    'fingerprint', COALESCE(p.body_key, encode(sha256(convert_to(regexp_replace(
        regexp_replace(p.body, '^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$', '', 'g'), '[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g'), 'UTF8')), 'hex')),
    'body', p.body,
    'media', to_jsonb(ARRAY(SELECT m.sha256 FROM post_media pm JOIN media m ON m.id = pm.media_id
                            WHERE pm.post_id = p.id ORDER BY pm.position)),
    'characters', CASE WHEN jsonb_typeof(p.characters) = 'array'
                       THEN COALESCE((SELECT jsonb_agg(c ->> 'code')
                                      FROM jsonb_array_elements(p.characters) c
                                      WHERE c ->> 'code' IS NOT NULL), '[]'::jsonb)
                       ELSE '[]'::jsonb END)
WHERE p.approved_pin IS NULL
  AND EXISTS (SELECT 1 FROM review_events e
              WHERE e.post_id = p.id AND e.actor_kind = 'member'
                AND e.action IN ('approved', 'client_review'));
