//! Times the queue's claim at depth, for `bench/queue_depth.py` (which fills the tables and prints
//! the table). Not part of the shipped binary: an example, built only by `cargo build --example`.
//!
//! `--claim store` calls `voiced::store::queue::claim_next`, the claim workers run.
//! `--claim main` runs the claim of main before issue 28 (`store::queue::claim` at 2506e5a), its
//! SQL copied verbatim below, on a database migrated without 0023 (it reads view `queue_served`).
//!
//! Each of `--claimers` tasks (own connection) claims `--claims` times and, untimed after each
//! claim, completes the job and enqueues a new one for the same account, so the depth stays as
//! filled (arrivals = completions). Prints one JSON line: every claim's milliseconds.

use std::time::{Duration, Instant};

use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, Row};
use voiced::store::queue::{self, Claimed, NewGeneration};

/// `store::queue::claim` at 2506e5a (main before issue 28), verbatim.
const MAIN_CLAIM: &str = r#"WITH next AS (
               SELECT g.id FROM generations g
               LEFT JOIN queue_served s ON s.account_id = g.account_id
               WHERE g.status = 'generating' AND g.attempts < g.max_attempts
                 AND g.cancel_reason IS NULL
                 AND (g.lease_expires_at IS NULL OR g.lease_expires_at < now())
                 AND NOT EXISTS (SELECT 1 FROM voice_prints p WHERE p.voice_id = g.voice_id
                                   AND p.print IS NULL AND p.error IS NULL)
               ORDER BY s.last_started NULLS FIRST, g.created_at, g.id
               FOR UPDATE OF g SKIP LOCKED
               LIMIT 1)
           UPDATE generations g
           SET attempts = g.attempts + 1, lease_owner = $1,
               lease_expires_at = now() + make_interval(secs => $2),
               started_at = COALESCE(g.started_at, now()), updated_at = now()
           FROM next, voice_profiles v
           WHERE g.id = next.id AND v.id = g.voice_id
           RETURNING g.id, g.engine, COALESCE(g.spoken_text, g.text) AS "text!",
                     g.text AS source_text, g.timestamps IS NOT NULL AS "wants_words!", g.seed, g.temperature, g.format, v.preset,
                     v.language, g.attempts, v.voice_type AS "voice_type: VoiceKind",
                     (SELECT p.print FROM voice_prints p
                      WHERE p.voice_id = g.voice_id AND p.engine = g.engine) AS voice_print,
                     (SELECT p.error FROM voice_prints p WHERE p.voice_id = g.voice_id) AS print_error,
                     v.personality_prompt AS personality"#;

struct Args {
    database_url: String,
    main: bool,
    claimers: usize,
    claims: usize,
}

fn args() -> Args {
    let mut args = Args {
        database_url: String::new(),
        main: false,
        claimers: 1,
        claims: 50,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().expect("every flag takes a value");
        match flag.as_str() {
            "--database-url" => args.database_url = value,
            "--claim" => args.main = value == "main",
            "--claimers" => args.claimers = value.parse().expect("--claimers N"),
            "--claims" => args.claims = value.parse().expect("--claims N"),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

/// One claim; the claimed generation's (id, account, voice).
async fn claim(pool: &PgPool, main: bool, worker: &str) -> Option<String> {
    let lease = Duration::from_secs(300);
    if main {
        sqlx::query(MAIN_CLAIM)
            .bind(worker)
            .bind(lease.as_secs_f64())
            .fetch_optional(pool)
            .await
            .expect("claim")
            .map(|row| row.get::<String, _>("id"))
    } else {
        match queue::claim_next(pool, worker, lease).await.expect("claim") {
            Some(Claimed::Generation(job)) => Some(job.id),
            Some(Claimed::Print(_)) => panic!("the bench queues no voice prints"),
            None => None,
        }
    }
}

/// Completes `id` and queues a new generation for its account (untimed).
async fn replace(pool: &PgPool, main: bool, id: &str) {
    let row = sqlx::query(
        "UPDATE generations SET status = 'completed', finished_at = now(), lease_owner = NULL,
                lease_expires_at = NULL, audio_key = 'bench'
         WHERE id = $1 RETURNING account_id, voice_id",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .expect("complete");
    let account: String = row.get("account_id");
    let voice: String = row.get("voice_id");
    let new = voiced::domain::new_id("gen");
    if main {
        sqlx::query(
            "INSERT INTO generations (id, account_id, voice_id, engine, text, seed, format, status)
             VALUES ($1, $2, $3, 'kokoro', 'Hi.', 1, 'wav', 'generating')",
        )
        .bind(&new)
        .bind(&account)
        .bind(&voice)
        .execute(pool)
        .await
        .expect("enqueue");
    } else {
        let mut tx = pool.begin().await.expect("begin");
        queue::enqueue(
            &mut tx,
            NewGeneration {
                id: &new,
                account_id: &account,
                api_key_id: None,
                voice_id: &voice,
                engine: "kokoro",
                text: "Hi.",
                spoken_text: None,
                timestamps: None,
                seed: 1,
                temperature: None,
                format: "wav",
                estimated_ms: 0,
            },
        )
        .await
        .expect("enqueue");
        tx.commit().await.expect("commit");
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    let mut tasks = Vec::new();
    // Every claimer connected before the first claim.
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(args.claimers));
    for claimer in 0..args.claimers {
        let url = args.database_url.clone();
        let start = start.clone();
        let (main, claims) = (args.main, args.claims);
        tasks.push(tokio::spawn(async move {
            // Two connections: the claim's, and the untimed bookkeeping's.
            let pool = PgPoolOptions::new()
                .max_connections(2)
                .min_connections(2)
                .connect(&url)
                .await
                .expect("connect");
            let worker = format!("bench:{claimer}");
            start.wait().await;
            let mut ms = Vec::with_capacity(claims);
            for _ in 0..claims {
                let started = Instant::now();
                let claimed = claim(&pool, main, &worker).await;
                ms.push(started.elapsed().as_secs_f64() * 1000.0);
                match claimed {
                    Some(id) => replace(&pool, main, &id).await,
                    None => panic!("the queue ran dry"),
                }
            }
            ms
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("claimer"));
    }
    let rendered: Vec<String> = all.iter().map(|ms| format!("{ms:.3}")).collect();
    println!("{{\"claims_ms\": [{}]}}", rendered.join(","));
}
