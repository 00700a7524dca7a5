-- Issue 27 item 4: a running generation's progress. The worker writes the audio it has rendered
-- (at most once a second, after a piece); reads show `progress` = rendered / estimated_ms,
-- below 1 until the generation completes. Numbered 0018: 0016 and 0017 belong to work on other
-- branches of the same wave.
ALTER TABLE generations ADD COLUMN rendered_ms BIGINT NOT NULL DEFAULT 0 CHECK (rendered_ms >= 0);
