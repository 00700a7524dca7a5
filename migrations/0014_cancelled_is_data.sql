-- "Was this generation cancelled?" is read from `cancel_reason` (set where the cancellation
-- happens, store::queue::cancel), never from the `error` text (issue 24). Every cancellation
-- since migration 0002 wrote the column; a failed row whose error carries the cancellation
-- prefix but no reason (written by hand, or restored from elsewhere) gets its reason here, so
-- that it still reads as cancelled. What GET /v1/generations/{id} shows (`status`, `error`) is
-- unchanged.
UPDATE generations
SET cancel_reason = error
WHERE status = 'failed' AND cancel_reason IS NULL AND error LIKE 'cancelled:%';
