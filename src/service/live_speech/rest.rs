//! The speech sockets' REST twin (ElevenLabs' `POST /v1/text-to-speech/{voice_id}` and
//! `…/stream`): a synchronous speech request (`speech::create_sync`: the same admission,
//! idempotency aside) rendered as 16-bit wav and delivered by `delivery::deliver` (streamed as
//! it is rendered, cancelled and charged what left when the client goes), transcoded on the
//! way to the socket's raw formats.

use bytes::Bytes;
use futures_util::StreamExt;

use crate::audio::{AudioFormat, OutputFormat, WavTranscoder};
use crate::domain::{EngineId, Seed, SpeechText};
use crate::service::core::Core;
use crate::service::delivery::{self, Delivery};
use crate::service::error::ServiceError;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::principal::Principal;
use crate::service::speech::{self, Accepted, Fields, SyncSpeechRequest};

/// A REST request of a speech-socket dialect, parsed.
pub struct ConvertRequest<'a> {
    pub text: SpeechText,
    /// A voice profile's id or name.
    pub voice: &'a str,
    pub engine: Option<(EngineId, &'static str)>,
    pub seed: Option<Seed>,
    pub output: OutputFormat,
}

/// Speaks `request` and delivers its audio in the asked format as it is rendered.
pub async fn convert(
    core: &Core,
    principal: &Principal,
    request: ConvertRequest<'_>,
    fields: Fields,
) -> Result<(Accepted, Delivery), ServiceError> {
    let sync = SyncSpeechRequest {
        text: request.text,
        voice: request.voice,
        engine: request.engine,
        seed: request.seed,
        temperature: None,
        format: AudioFormat::Wav,
    };
    // These dialects send no idempotency key.
    let keyed = Keyed {
        operation: KeyUse::SyncSpeech,
        key: None,
        fingerprint: Vec::new(),
    };
    let accepted = speech::create_sync(core, principal, sync, fields, keyed).await?;
    let delivery = delivery::deliver(core, &accepted.generation_id, accepted.replayed).await?;
    Ok((accepted, transcoded(delivery, request.output)))
}

/// The delivery's wav turned into `output` chunk by chunk (on the blocking pool); the body
/// still ends early exactly when the wav's did.
fn transcoded(delivery: Delivery, output: OutputFormat) -> Delivery {
    let state = (delivery.body, Some(WavTranscoder::new(output)));
    let body = futures_util::stream::unfold(state, |(mut body, transcoder)| async move {
        let mut transcoder = transcoder?;
        loop {
            let next = body.next().await;
            let last = next.is_none();
            let bytes = match next {
                Some(Ok(bytes)) => Some(bytes),
                Some(Err(err)) => return Some((Err(err), (body, None))),
                None => None,
            };
            let work = tokio::task::spawn_blocking(move || {
                let out = match bytes {
                    Some(bytes) => transcoder.push(&bytes),
                    None => transcoder.finish(),
                };
                (transcoder, out)
            });
            let (back, out) = match work.await {
                Ok(done) => done,
                Err(err) => return Some((Err(std::io::Error::other(err)), (body, None))),
            };
            transcoder = back;
            match out {
                Err(err) => return Some((Err(std::io::Error::other(err)), (body, None))),
                Ok(out) if last => {
                    return Some((Ok(Bytes::from(out)), (body, None)));
                }
                Ok(out) if out.is_empty() => continue,
                Ok(out) => return Some((Ok(Bytes::from(out)), (body, Some(transcoder)))),
            }
        }
    });
    Delivery {
        content_type: output.content_type().to_owned(),
        len: None,
        body: body.boxed(),
    }
}
