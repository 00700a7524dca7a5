-- Captures keep their timings and what was asked (issue 25): `task` (transcribe, or translate:
-- the transcript is English and `language` the language spoken), `timestamps` (none, segment,
-- word: what the request asked for), `segments` and `words` (JSONB arrays, as
-- `domain::Segment`/`domain::Word` serialise; NULL when not asked for). Captures made through
-- OpenAI's dialect keep `source` `api` (DECISIONS: the allowed values stay api, app, agent).
ALTER TABLE captures ADD COLUMN task TEXT NOT NULL DEFAULT 'transcribe'
    CHECK (task IN ('transcribe', 'translate'));
ALTER TABLE captures ADD COLUMN timestamps TEXT NOT NULL DEFAULT 'none'
    CHECK (timestamps IN ('none', 'segment', 'word'));
ALTER TABLE captures ADD COLUMN segments JSONB;
ALTER TABLE captures ADD COLUMN words JSONB;
