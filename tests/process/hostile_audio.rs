//! Hostile audio through the real HTTP API of a real `voiced serve` process (issue 8): headers
//! that declare absurd rates, channel counts, sizes and lengths, truncated files, 25 MiB of
//! noise and a clip one second over the limit. Each gets its documented 4xx, the server's peak
//! memory stays within 100 MiB of what it was before the corpus, and it transcribes normally
//! afterwards. Every file is generated here (ffmpeg, or bytes written by hand).
//!
//! And hostile load on every door that takes large bodies (issue 23): 20 concurrent 32 MiB
//! `/mcp` messages from an account without a plan beside 20 concurrent 25 MiB transcriptions
//! from a paid one, then 20 concurrent 32 MiB non-`transcribe` `/mcp` messages from the paid
//! one: the server's peak memory stays below its idle memory + 1 GiB.

use crate::asr;
use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{assert_problem, json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use voiced::domain::{ApiKeySecret, Plan, Scope, new_id};
use voiced::store;

/// `voiced serve` as a child process; killed on drop.
struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(database_url: &str, data_dir: &Path) -> Server {
        // A child cannot be handed a port-0 listener: take a free port and release it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_voiced"));
        command
            .arg("serve")
            .env("VOICED_DATABASE_URL", database_url)
            .env("VOICED_DATA_DIR", data_dir)
            .env("VOICED_BIND", format!("127.0.0.1:{port}"))
            .env("VOICED_WORKERS", "0")
            .env("VOICED_WHISPER_MODEL", "whisper-tiny.en")
            .env(
                "VOICED_SIGNING_SECRET",
                "hostile-audio-test-secret-0123456789abcdef",
            )
            .env("VOICED_LOG", "warn,symphonia=error")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if let Some(models) = std::env::var_os("VOICED_MODELS_DIR") {
            command.env("VOICED_MODELS_DIR", models);
        }
        let mut server = Server {
            child: command.spawn().expect("voiced serve starts"),
            base: format!("http://127.0.0.1:{port}"),
        };
        // Poll /readyz (model load and warm-up come first) with a generous deadline.
        let client = crate::common::http_client();
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("voiced serve exited before it was ready: {status}");
            }
            if let Ok(r) = client.get(format!("{}/readyz", server.base)).send().await
                && r.status().is_success()
            {
                return server;
            }
            assert!(Instant::now() < deadline, "voiced serve never became ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Peak resident memory of the server process so far (`VmHWM`), in KiB.
    fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM")
    }

    /// Resident memory of the server process now (`VmRSS`), in KiB.
    fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS")
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect(field)
    }

    fn assert_alive(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "voiced serve died"
        );
    }
}

async fn transcribe(
    client: &reqwest::Client,
    server: &Server,
    secret: &str,
    bytes: &[u8],
) -> (u16, Value) {
    let body = serde_json::to_vec(&json!({ "audio": STANDARD.encode(bytes) })).unwrap();
    json(
        client
            .post(format!("{}/v1/transcriptions", server.base))
            .bearer_auth(secret)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// 16-bit PCM wav with the given header fields (`None`: the true value) around `frames` frames
/// of a quiet tone.
fn wav(
    rate: u32,
    channels: u16,
    frames: usize,
    riff_len: Option<u32>,
    data_len: Option<u32>,
) -> Vec<u8> {
    let data: Vec<u8> = (0..frames * usize::from(channels))
        .flat_map(|i| (((i as f64 * 0.06).sin() * 8000.0) as i16).to_le_bytes())
        .collect();
    let mut out = Vec::with_capacity(44 + data.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_len.unwrap_or(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&rate.wrapping_mul(2 * u32::from(channels)).to_le_bytes());
    out.extend_from_slice(&(2 * channels).to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.unwrap_or(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&data);
    out
}

/// A 440 Hz tone encoded by ffmpeg (`args`: output options) into `name` under `dir`.
fn ffmpeg_tone(dir: &Path, name: &str, secs: f64, rate: u32, args: &[&str]) -> Vec<u8> {
    let path = dir.join(name);
    let status = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
        ])
        .arg(format!(
            "sine=frequency=440:sample_rate={rate}:duration={secs}"
        ))
        .args(args)
        .arg(&path)
        .status()
        .expect("ffmpeg runs (scripts/install-deps.sh installs it)");
    assert!(status.success(), "ffmpeg {name}");
    std::fs::read(&path).unwrap()
}

/// CRC-32 of Ogg pages (polynomial 0x04c11db7, no reflection).
fn ogg_crc(data: &[u8]) -> u32 {
    let mut crc = 0u32;
    for &b in data {
        crc ^= u32::from(b) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04c1_1db7
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The Vorbis identification header (first Ogg page) declaring `rate`, with a valid page CRC.
fn vorbis_with_rate(ogg: &[u8], rate: u32) -> Vec<u8> {
    let mut ogg = ogg.to_vec();
    let body = 27 + usize::from(ogg[26]);
    let page_len = body + ogg[27..body].iter().map(|&s| usize::from(s)).sum::<usize>();
    assert_eq!(&ogg[body..body + 7], b"\x01vorbis");
    ogg[body + 12..body + 16].copy_from_slice(&rate.to_le_bytes());
    ogg[22..26].fill(0);
    let crc = ogg_crc(&ogg[..page_len]);
    ogg[22..26].copy_from_slice(&crc.to_le_bytes());
    ogg
}

/// The Matroska `SamplingFrequency` (id 0xB5, 8-byte float) set to `rate`.
fn webm_with_rate(webm: &[u8], rate: f64) -> Vec<u8> {
    let mut webm = webm.to_vec();
    let at = webm
        .windows(2)
        .position(|w| w == [0xB5, 0x88])
        .expect("SamplingFrequency element");
    webm[at + 2..at + 10].copy_from_slice(&rate.to_be_bytes());
    webm
}

/// The EBML header and its DocType declaring about 2^56 bytes each (symphonia would allocate
/// the DocType's size before reading it; the failed allocation aborts the process).
fn webm_with_huge_doctype(webm: &[u8]) -> Vec<u8> {
    let at = webm
        .windows(3)
        .position(|w| w == [0x42, 0x82, 0x84])
        .expect("DocType");
    assert!(webm[..4] == [0x1a, 0x45, 0xdf, 0xa3] && webm[4] & 0x80 != 0);
    let mut bytes = webm[..4].to_vec();
    bytes.extend_from_slice(&[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0]);
    bytes.extend_from_slice(&webm[5..at + 2]);
    bytes.extend_from_slice(&[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc0]);
    bytes.extend_from_slice(&webm[at + 3..]);
    bytes
}

/// The first SimpleBlock switched to EBML lacing with a first frame of about 2^56 bytes.
fn webm_with_huge_laced_frame(webm: &[u8]) -> Vec<u8> {
    let data = (0..webm.len() - 16)
        .find_map(|i| {
            if webm[i] != 0xa3 || webm[i + 1] == 0 {
                return None;
            }
            let data = i + 1 + webm[i + 1].leading_zeros() as usize + 1;
            (webm[data] == 0x81 && webm[data + 3] == 0x80).then_some(data)
        })
        .expect("a SimpleBlock");
    let mut bytes = webm.to_vec();
    bytes[data + 3] = 0x86;
    bytes[data + 4] = 1;
    bytes[data + 5..data + 13].copy_from_slice(&[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]);
    bytes
}

/// FLAC with STREAMINFO's sample rate (20 bits) and/or total samples (36 bits) replaced.
fn flac_with_streaminfo(flac: &[u8], rate: Option<u32>, total: Option<u64>) -> Vec<u8> {
    let mut flac = flac.to_vec();
    assert_eq!(&flac[..4], b"fLaC");
    let si = &mut flac[8..8 + 34];
    if let Some(rate) = rate {
        si[10] = (rate >> 12) as u8;
        si[11] = (rate >> 4) as u8;
        si[12] = (si[12] & 0x0f) | ((rate as u8 & 0x0f) << 4);
    }
    if let Some(total) = total {
        si[13] = (si[13] & 0xf0) | ((total >> 32) as u8 & 0x0f);
        si[14..18].copy_from_slice(&(total as u32).to_be_bytes());
    }
    flac
}

/// Deterministic pseudo-random bytes (xorshift).
fn noise(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

/// The corpus: (what, bytes, expected status).
fn corpus(dir: &Path) -> Vec<(String, Vec<u8>, u16)> {
    let mut cases = Vec::new();
    for rate in [0, 1, 7_999, 384_001, 30_000_001, u32::MAX] {
        cases.push((
            format!("wav at {rate} Hz"),
            wav(rate, 1, 2_000, None, None),
            400,
        ));
    }
    for channels in [0, 255] {
        cases.push((
            format!("wav with {channels} channels"),
            wav(16_000, channels, 2_000, None, None),
            400,
        ));
    }
    let good = wav(16_000, 1, 16_000, None, None);
    for len in [4, 12, 20, 36, 43] {
        cases.push((
            format!("wav header cut to {len} bytes"),
            good[..len].to_vec(),
            400,
        ));
    }
    cases.push((
        "wav data chunk claiming 4 GiB".into(),
        wav(16_000, 1, 16_000, None, Some(u32::MAX)),
        400,
    ));
    cases.push((
        "wav claiming 10 s, holding 1 s".into(),
        wav(16_000, 1, 16_000, Some(36 + 320_000), Some(320_000)),
        400,
    ));

    let ogg = ffmpeg_tone(dir, "a.ogg", 1.0, 48_000, &["-c:a", "libvorbis"]);
    for rate in [1, 384_001, u32::MAX] {
        cases.push((
            format!("ogg vorbis at {rate} Hz"),
            vorbis_with_rate(&ogg, rate),
            400,
        ));
    }
    let webm = ffmpeg_tone(dir, "a.webm", 1.0, 48_000, &["-c:a", "libopus"]);
    for rate in [1.0, 4_294_967_295.0, 1e300, f64::NAN] {
        cases.push((
            format!("webm at {rate} Hz"),
            webm_with_rate(&webm, rate),
            400,
        ));
    }
    cases.push((
        "webm DocType of 2^56 bytes".into(),
        webm_with_huge_doctype(&webm),
        400,
    ));
    cases.push((
        "webm laced frame of 2^56 bytes".into(),
        webm_with_huge_laced_frame(&webm),
        400,
    ));
    let flac = ffmpeg_tone(dir, "a.flac", 1.0, 16_000, &[]);
    cases.push((
        "flac STREAMINFO at 1 048 575 Hz".into(),
        flac_with_streaminfo(&flac, Some(1_048_575), None),
        400,
    ));
    cases.push((
        "flac STREAMINFO at 1 Hz".into(),
        flac_with_streaminfo(&flac, Some(1), None),
        400,
    ));
    cases.push((
        "flac STREAMINFO claiming 2^36 samples".into(),
        flac_with_streaminfo(&flac, None, Some((1 << 36) - 1)),
        400,
    ));
    cases.push((
        "flac STREAMINFO claiming 60 s".into(),
        flac_with_streaminfo(&flac, None, Some(16_000 * 60)),
        400,
    ));
    cases.push((
        "flac STREAMINFO claiming 0.25 s".into(),
        flac_with_streaminfo(&flac, None, Some(4_000)),
        400,
    ));

    let max = voiced::audio::MAX_AUDIO_BYTES;
    cases.push(("25 MiB of random bytes".into(), noise(max, 8), 400));
    cases.push(("25 MiB + 1 of random bytes".into(), noise(max + 1, 9), 413));
    // 15 min + 1 s of valid 8 kHz mono 16-bit wav: 14.4 MB.
    let long = ffmpeg_tone(
        dir,
        "long.wav",
        901.0,
        8_000,
        &["-ac", "1", "-c:a", "pcm_s16le"],
    );
    assert!(long.len() < max);
    cases.push(("valid wav of 15 min + 1 s".into(), long, 400));
    cases
}

#[tokio::test]
async fn hostile_audio_is_refused_cheaply_and_the_server_carries_on() {
    let (pool, db) = common::db::fresh_database().await;
    let account = new_id("acct");
    store::accounts::insert(
        &pool,
        &account,
        &format!("{account}@example.com"),
        Plan::Pro,
    )
    .await
    .unwrap();
    let secret = ApiKeySecret::generate();
    let scopes: Vec<String> = Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect();
    store::keys::insert(
        &pool,
        store::keys::NewKey {
            id: &new_id("key"),
            account_id: &account,
            name: "hostile",
            prefix: &secret.prefix(),
            hash: &secret.hash(),
            scopes: &scopes,
            ceiling_minutes: None,
        },
    )
    .await
    .unwrap();
    let secret = secret.expose().to_owned();

    let dir = asr::scratch_dir();
    let data_dir = dir.join("hostile-serve");
    let speech = std::fs::read(asr::espeak_wav(
        "en-us",
        "The quick brown fox jumps over the lazy dog",
    ))
    .unwrap();
    let corpus = corpus(&dir);

    let mut server = Server::start(&db.url(), &data_dir).await;
    let client = crate::common::http_client_builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();

    // Warm-up: one normal transcription, so the peak includes a real request's working set.
    let (status, warm) = transcribe(&client, &server, &secret, &speech).await;
    assert_eq!(status, 200, "{warm}");
    assert!(!warm["text"].as_str().unwrap().is_empty(), "{warm}");
    let before = server.peak_rss_kib();

    for (what, bytes, expected) in &corpus {
        let (status, body) = transcribe(&client, &server, &secret, bytes).await;
        assert_eq!(status, *expected, "{what}: {body}");
        match expected {
            400 => assert_problem(&body, 400, "invalid_request", "/v1/transcriptions"),
            _ => assert_problem(&body, 413, "payload_too_large", "/v1/transcriptions"),
        }
        assert_eq!(body["param"], "audio", "{what}: {body}");
        server.assert_alive();
        eprintln!(
            "{what}: {status}; peak RSS {:+.1} MiB",
            (server.peak_rss_kib() as f64 - before as f64) / 1024.0
        );
    }
    let after = server.peak_rss_kib();
    eprintln!(
        "voiced serve peak RSS: {:.1} MiB after warm-up, {:.1} MiB after the corpus ({:+.1} MiB)",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        (after as f64 - before as f64) / 1024.0
    );

    // And it still transcribes, as it did before the corpus.
    let (status, again) = transcribe(&client, &server, &secret, &speech).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["text"], warm["text"], "{again}");
    assert_eq!(again["duration_ms"], warm["duration_ms"]);
    assert!(
        after.saturating_sub(before) < 100 * 1024,
        "peak RSS grew by {} KiB during the corpus",
        after - before
    );
    drop(server);
    pool.close().await;
    db.cleanup().await;
}

/// An account with `plan` and a key with `scopes`; returns the key's secret.
async fn account_with_key(pool: &sqlx::PgPool, plan: Plan, scopes: &[Scope]) -> String {
    let account = new_id("acct");
    store::accounts::insert(pool, &account, &format!("{account}@example.com"), plan)
        .await
        .unwrap();
    let secret = ApiKeySecret::generate();
    let scopes: Vec<String> = scopes.iter().map(|s| s.as_str().to_owned()).collect();
    store::keys::insert(
        pool,
        store::keys::NewKey {
            id: &new_id("key"),
            account_id: &account,
            name: "hostile",
            prefix: &secret.prefix(),
            hash: &secret.hash(),
            scopes: &scopes,
            ceiling_minutes: None,
        },
    )
    .await
    .unwrap();
    secret.expose().to_owned()
}

/// POSTs `body` to `path` with `secret`; the status and problem `code` of the answer ("ok" for
/// a success, "reset" when the server closed the connection before the answer could be read).
async fn post_large(
    client: reqwest::Client,
    url: String,
    secret: String,
    body: bytes::Bytes,
) -> (u16, String) {
    let sent = client
        .post(url)
        .bearer_auth(secret)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body)
        .send()
        .await;
    let Ok(response) = sent else {
        return (0, "reset".into());
    };
    let status = response.status().as_u16();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    let code = if let Some(code) = answer["code"].as_str() {
        code.to_owned()
    } else if answer["result"]["isError"] == true {
        // A tool error: its text is the problem document.
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("{}");
        let error: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        format!("tool:{}", error["code"].as_str().unwrap_or("?"))
    } else {
        "ok".into()
    };
    (status, code)
}

/// A `tools/call` of `tool` with a JSON array of about `bytes` bytes in its arguments, `name`
/// before `arguments` as the SDKs write it.
fn junk_call(tool: &str, bytes: usize) -> bytes::Bytes {
    let mut junk = "1,".repeat(bytes / 2);
    junk.pop();
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"junk":[{junk}]}}}}}}"#
    )
    .into()
}

/// Tallies (status, code) answers, sorted, for messages and assertions.
fn tally(answers: &[(u16, String)]) -> Vec<((u16, String), usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for answer in answers {
        *counts.entry(answer.clone()).or_insert(0) += 1;
    }
    counts.into_iter().collect()
}

#[tokio::test]
async fn hostile_load_on_every_door_stays_within_a_gibibyte() {
    const MIB: usize = 1024 * 1024;
    let (pool, db) = common::db::fresh_database().await;
    let free = account_with_key(&pool, Plan::None, &[Scope::VoiceRead]).await;
    let paid = account_with_key(&pool, Plan::Pro, &Scope::ALL).await;
    let dir = asr::scratch_dir();
    let data_dir = dir.join("hostile-load-serve");
    let speech = std::fs::read(asr::espeak_wav(
        "en-us",
        "The quick brown fox jumps over the lazy dog",
    ))
    .unwrap();
    let mut server = Server::start(&db.url(), &data_dir).await;
    let client = crate::common::http_client_builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let (status, warm) = transcribe(&client, &server, &paid, &speech).await;
    assert_eq!(status, 200, "{warm}");
    let idle = server.rss_kib();

    // 20 × 32 MiB /mcp messages (a list_voices with a 32 MiB array: 10 GB of trees before)
    // from the account without a plan, beside 20 × 25 MiB of audio (noise: undecodable) from the
    // paid one, half through /v1/transcriptions and half through the agent's transcribe.
    let free_call = junk_call("list_voices", 32 * MIB);
    let noise_b64 = STANDARD.encode(noise(25 * MIB, 23));
    let rest_upload = bytes::Bytes::from(format!(r#"{{"audio":"{noise_b64}"}}"#));
    let mcp_upload = bytes::Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"transcribe","arguments":{{"audio_base64":"{noise_b64}"}}}}}}"#
    ));
    drop(noise_b64);
    let mut free_calls = Vec::new();
    let mut uploads = Vec::new();
    for i in 0..20 {
        free_calls.push(tokio::spawn(post_large(
            client.clone(),
            format!("{}/mcp", server.base),
            free.clone(),
            free_call.clone(),
        )));
        let (path, body) = if i % 2 == 0 {
            ("/v1/transcriptions", rest_upload.clone())
        } else {
            ("/mcp", mcp_upload.clone())
        };
        uploads.push(tokio::spawn(post_large(
            client.clone(),
            format!("{}{path}", server.base),
            paid.clone(),
            body,
        )));
    }
    let mut free_answers = Vec::new();
    for call in free_calls {
        free_answers.push(call.await.unwrap());
    }
    let mut upload_answers = Vec::new();
    for call in uploads {
        upload_answers.push(call.await.unwrap());
    }
    server.assert_alive();
    let after_burst = server.peak_rss_kib();
    eprintln!("free account, 20 × 32 MiB /mcp: {:?}", tally(&free_answers));
    eprintln!(
        "paid account, 20 × 25 MiB of audio: {:?}",
        tally(&upload_answers)
    );
    // Without a plan: refused before anything was read.
    assert!(
        free_answers
            .iter()
            .all(|(status, code)| (*status, code.as_str()) == (403, "pro_plan_required")),
        "{free_answers:?}"
    );
    // The paid account: admitted to its cap and decoded (refused as undecodable), the rest
    // refused before they were read (its cap, or a full recogniser).
    for (status, code) in &upload_answers {
        assert!(
            matches!(
                (*status, code.as_str()),
                (400, "invalid_request")
                    | (200, "tool:invalid_request")
                    | (429, "rate_limit_exceeded")
                    | (503, "service_unavailable")
            ),
            "{upload_answers:?}"
        );
    }
    assert!(
        upload_answers
            .iter()
            .any(|(_, code)| code.ends_with("invalid_request")),
        "some uploads were admitted and decoded: {upload_answers:?}"
    );

    // The paid account's 20 × 32 MiB non-transcribe messages: 413 after at most 1 MiB each.
    let paid_call = junk_call("list_voices", 32 * MIB);
    let mut paid_calls = Vec::new();
    for _ in 0..20 {
        paid_calls.push(tokio::spawn(post_large(
            client.clone(),
            format!("{}/mcp", server.base),
            paid.clone(),
            paid_call.clone(),
        )));
    }
    let mut paid_answers = Vec::new();
    for call in paid_calls {
        paid_answers.push(call.await.unwrap());
    }
    server.assert_alive();
    eprintln!("paid account, 20 × 32 MiB /mcp: {:?}", tally(&paid_answers));
    assert!(
        paid_answers
            .iter()
            .all(|(status, code)| (*status, code.as_str()) == (413, "payload_too_large")),
        "{paid_answers:?}"
    );
    let peak = server.peak_rss_kib();
    eprintln!(
        "voiced serve: idle RSS {:.0} MiB; peak (VmHWM) {:.0} MiB after the mixed burst, {:.0} MiB \
         after the paid /mcp burst; growth {:+.0} MiB (limit 1024)",
        idle as f64 / 1024.0,
        after_burst as f64 / 1024.0,
        peak as f64 / 1024.0,
        (peak as f64 - idle as f64) / 1024.0
    );
    assert!(
        peak.saturating_sub(idle) < 1024 * 1024,
        "peak RSS {peak} KiB is more than 1 GiB above idle ({idle} KiB)"
    );

    // And it still transcribes.
    let (status, again) = transcribe(&client, &server, &paid, &speech).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["text"], warm["text"]);
    drop(server);
    pool.close().await;
    db.cleanup().await;
}
