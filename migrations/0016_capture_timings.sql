-- Captures keep their timings and what was asked (issue 25): `task` (transcribe, or translate:
-- the transcript is English and `language` the language spoken), `timestamps` (none, segment,
-- word: what the request asked for), `segments` and `words` (JSONB arrays, as
-- `domain::Segment`/`domain::Word` serialise; NULL when not asked for). `source` gains
-- `openai`: made through OpenAI's dialect (`POST /v1/audio/transcriptions`, `/translations`).
ALTER TABLE captures ADD COLUMN task TEXT NOT NULL DEFAULT 'transcribe'
    CHECK (task IN ('transcribe', 'translate'));
ALTER TABLE captures ADD COLUMN timestamps TEXT NOT NULL DEFAULT 'none'
    CHECK (timestamps IN ('none', 'segment', 'word'));
ALTER TABLE captures ADD COLUMN segments JSONB;
ALTER TABLE captures ADD COLUMN words JSONB;
ALTER TABLE captures DROP CONSTRAINT captures_source_check;
ALTER TABLE captures ADD CONSTRAINT captures_source_check
    CHECK (source IN ('api', 'app', 'agent', 'openai'));
