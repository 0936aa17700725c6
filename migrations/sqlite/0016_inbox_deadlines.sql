-- When an inbox item went past its kind's deadline and was escalated to the lead
-- (announced again once, by whichever process swept first).
ALTER TABLE inbox_items ADD COLUMN escalated_at DATETIME;
