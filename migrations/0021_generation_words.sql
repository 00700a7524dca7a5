-- Issue 26 item 2: word timestamps of generated speech. `timestamps` is what the request asked
-- for ('word', or NULL for none); `words` the words with their times and source offsets, written
-- when the generation completes (`[{text, start, end, source_start, source_end}]`).
ALTER TABLE generations ADD COLUMN timestamps TEXT CHECK (timestamps IN ('word'));
ALTER TABLE generations ADD COLUMN words JSONB;
