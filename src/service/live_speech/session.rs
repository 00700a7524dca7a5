//! One speech socket's session task: the socket's places, its contexts (each a
//! [`speak::context`] task fed its phrases), the client's inputs turned into phrases, marks and
//! cancels, and the socket's end (see the module above for the rules).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until};

use super::phrases::{Buffer, SCHEDULE_RANGE};
use super::speak;
use super::{
    ContextVoice, Delivered, EVENT_QUEUE, EndReason, INPUT_QUEUE, MAX_CONTEXT_ID, MAX_CONTEXTS,
    PHRASE_QUEUE, Params, SpeechEvent, SpeechEvents, SpeechInput, SpeechInputs, SpeechSession,
    find_voice, phrases,
};
use crate::domain::CancelReason;
use crate::service::core::{Core, Slot};
use crate::service::error::{ErrorCode, ServiceError};
use crate::service::principal::Principal;

/// Takes the socket's places and starts the session.
pub(super) fn start(
    core: &Core,
    principal: &Principal,
    speaker: Option<speak::Speaker>,
    idle: u64,
    auto_mode: bool,
    params: Params,
) -> Result<SpeechSession, ServiceError> {
    let sockets = &core.speech_sockets;
    let account_slot = sockets
        .per_account
        .take(&principal.account_id)
        .ok_or_else(|| {
            ServiceError::new(
                ErrorCode::RateLimitExceeded,
                "This account has as many speech sockets open as it may (max_speech_sockets_per_account); close one first.",
            )
            .with_retry_after(5)
        })?;
    let process_slot = sockets.process.take("process").ok_or_else(|| {
        ServiceError::new(
            ErrorCode::ServiceUnavailable,
            "This server has as many speech sockets open as it allows; retry shortly.",
        )
        .with_retry_after(5)
    })?;
    let (input_tx, input_rx) = mpsc::channel(INPUT_QUEUE);
    let (event_tx, event_rx) = mpsc::channel(EVENT_QUEUE);
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(speak::Shared {
        core: core.clone(),
        principal: principal.clone(),
        fields: params.speech,
        events: event_tx,
        busy: AtomicUsize::new(0),
        done: done_tx,
    });
    let session = Session {
        shared,
        speaker,
        named: None,
        params,
        auto_mode,
        idle: Duration::from_secs(idle),
        max_session: sockets.max_session,
        contexts: HashMap::new(),
        finishing: Vec::new(),
        done: done_rx,
        closing: false,
        _slots: (account_slot, process_slot),
    };
    metrics::gauge!("voiced_speech_sockets").increment(1.0);
    tokio::spawn(session.run(input_rx));
    Ok(SpeechSession {
        inputs: SpeechInputs(input_tx),
        events: SpeechEvents(event_rx),
    })
}

/// One context as the session holds it.
struct Context {
    buffer: Buffer,
    schedule: Option<Vec<usize>>,
    /// `None` once the context's input has ended (its task finishes what it holds).
    phrases: Option<mpsc::Sender<speak::Work>>,
    stop: watch::Sender<Option<CancelReason>>,
    cut: Arc<AtomicBool>,
}

impl Context {
    fn cancel(&self, reason: CancelReason) {
        self.cut.store(true, Ordering::Release);
        let _ = self.stop.send(Some(reason));
    }
}

struct Session {
    shared: Arc<speak::Shared>,
    /// The voice and format of the socket (`None`: each context names its own).
    speaker: Option<speak::Speaker>,
    /// The last [`SpeechInput::Speaker`] of a context not open yet (one: nothing grows).
    named: Option<(String, speak::Speaker)>,
    params: Params,
    auto_mode: bool,
    idle: Duration,
    max_session: Duration,
    contexts: HashMap<String, Context>,
    /// Contexts closed after a flush, still speaking what they hold (stopped with the rest
    /// when the socket ends early, or cancelled by id).
    finishing: Vec<(String, Context)>,
    /// Contexts whose task has ended (`Err`: refused).
    done: mpsc::UnboundedReceiver<speak::Finished>,
    closing: bool,
    _slots: (Slot, Slot),
}

impl Session {
    async fn run(mut self, mut inputs: mpsc::Receiver<SpeechInput>) {
        let opened = Instant::now();
        let mut last_input = Instant::now();
        let shutting_down = self.shared.core.shutting_down();
        tokio::pin!(shutting_down);
        // Context tasks still running (cancelled ones finish their cancellation on their own).
        let mut running = 0usize;
        let reason = loop {
            let idle_at = last_input + self.idle;
            tokio::select! {
                input = inputs.recv(), if !self.closing => match input {
                    Some(input) => {
                        last_input = Instant::now();
                        let context = input.context().map(str::to_owned);
                        match self.handle(input, &mut running).await {
                            Ok(()) => {}
                            Err(error) => break self.refuse(context, error).await,
                        }
                        if self.closing && running == 0 {
                            break EndReason::Client;
                        }
                    }
                    // The client went away: everything stops.
                    None => {
                        self.stop_all(CancelReason::Disconnected);
                        return self.finish(None).await;
                    }
                },
                finished = self.done.recv() => match finished {
                    // A phrase ended: the idle timeout counts from now.
                    Some(speak::Finished::Spoken) => last_input = Instant::now(),
                    Some(speak::Finished::Done) => {
                        running = running.saturating_sub(1);
                        self.finishing.retain(|(_, c)| !c.stop.is_closed());
                        if self.closing && running == 0 {
                            break EndReason::Client;
                        }
                    }
                    Some(speak::Finished::Refused) | None => break EndReason::Refused,
                },
                () = sleep_until(idle_at), if self.shared.busy.load(Ordering::Acquire) == 0 => {
                    break EndReason::Idle;
                }
                () = sleep_until(opened + self.max_session) => break EndReason::MaxDuration,
                () = &mut shutting_down => break EndReason::Shutdown,
            }
        };
        let cancel = match reason {
            EndReason::MaxDuration => CancelReason::TimeLimit,
            EndReason::Shutdown => CancelReason::Shutdown,
            _ => CancelReason::Disconnected,
        };
        self.stop_all(cancel);
        self.finish(Some(reason)).await;
    }

    async fn finish(self, reason: Option<EndReason>) {
        metrics::gauge!("voiced_speech_sockets").decrement(1.0);
        if let Some(reason) = reason {
            self.shared.send(SpeechEvent::Ended(reason)).await;
        }
    }

    fn stop_all(&mut self, reason: CancelReason) {
        for (_, context) in self.contexts.drain() {
            context.cancel(reason);
        }
        for (_, context) in self.finishing.drain(..) {
            context.cancel(reason);
        }
    }

    /// Sends a refusal of the session's own (a bad message), and ends.
    async fn refuse(&mut self, context: Option<String>, error: ServiceError) -> EndReason {
        self.shared
            .send(SpeechEvent::Refused { context, error })
            .await;
        EndReason::Refused
    }

    async fn handle(
        &mut self,
        input: SpeechInput,
        running: &mut usize,
    ) -> Result<(), ServiceError> {
        match input {
            SpeechInput::Text {
                context,
                text,
                flush,
                schedule,
            } => {
                if text.is_empty() && !flush && !self.contexts.contains_key(&context) {
                    // A keep-alive of a context not (or no longer) open.
                    return Ok(());
                }
                let schedule = schedule.map(|s| self.check_schedule(s)).transpose()?;
                self.open_context(&context, running)?;
                let auto_mode = self.auto_mode;
                let Some(ctx) = self.contexts.get_mut(&context) else {
                    return Ok(());
                };
                if let Some(schedule) = schedule {
                    ctx.schedule = Some(schedule);
                }
                ctx.buffer.push(&text);
                let schedule = (!auto_mode).then(|| {
                    ctx.schedule
                        .clone()
                        .unwrap_or_else(|| phrases::DEFAULT_SCHEDULE.to_vec())
                });
                let mut ready = Vec::new();
                while let Some(phrase) = ctx.buffer.ready(schedule.as_deref()) {
                    ready.push(phrase);
                }
                if flush && let Some(phrase) = ctx.buffer.take() {
                    ready.push(phrase);
                }
                for phrase in ready {
                    self.queue(&context, phrase).await;
                }
            }
            SpeechInput::CloseContext { context } => match self.contexts.remove(&context) {
                Some(ctx) if ctx.buffer.has_words() => ctx.cancel(CancelReason::Request),
                // Everything was flushed: its task speaks what it holds, then ends.
                Some(mut ctx) => {
                    ctx.phrases = None;
                    self.finishing.push((context, ctx));
                }
                None => self.shared.send(SpeechEvent::ContextDone { context }).await,
            },
            SpeechInput::Refuse(error) => return Err(error),
            SpeechInput::Speaker { context, speaker } => {
                if !self.contexts.contains_key(&context) {
                    let ContextVoice {
                        voice,
                        engine,
                        output,
                    } = speaker;
                    let core = &self.shared.core;
                    let voice =
                        find_voice(core, &self.shared.principal, &voice, engine, self.params)
                            .await?;
                    self.named = Some((context, speak::Speaker { voice, output }));
                }
            }
            SpeechInput::Cancel { context } => {
                if let Some(ctx) = self.contexts.remove(&context) {
                    ctx.cancel(CancelReason::Request);
                } else if let Some(at) = self.finishing.iter().position(|(id, _)| *id == context) {
                    self.finishing.remove(at).1.cancel(CancelReason::Request);
                }
            }
            SpeechInput::Mark { context, mark } => {
                let sender = self.contexts.get(&context).and_then(|c| c.phrases.clone());
                let queued = match sender {
                    Some(sender) => sender.send(speak::Work::Mark(mark)).await.is_ok(),
                    None => false,
                };
                if !queued {
                    let _ = self
                        .shared
                        .events
                        .send((Delivered::Mark { context, mark }, None))
                        .await;
                }
            }
            SpeechInput::Close => {
                self.closing = true;
                let ids: Vec<String> = self.contexts.keys().cloned().collect();
                for id in ids {
                    if let Some(phrase) = self.contexts.get_mut(&id).and_then(|c| c.buffer.take()) {
                        self.queue(&id, phrase).await;
                    }
                }
                for (id, mut ctx) in self.contexts.drain() {
                    ctx.phrases = None;
                    self.finishing.push((id, ctx));
                }
            }
        }
        Ok(())
    }

    fn check_schedule(&self, schedule: Vec<usize>) -> Result<Vec<usize>, ServiceError> {
        if schedule.is_empty()
            || schedule.len() > 16
            || schedule.iter().any(|n| !SCHEDULE_RANGE.contains(n))
        {
            return Err(ServiceError::invalid(
                self.params.schedule,
                format!(
                    "{} must be 1 to 16 numbers of characters, each {} to {}",
                    self.params.schedule,
                    SCHEDULE_RANGE.start(),
                    SCHEDULE_RANGE.end()
                ),
            ));
        }
        Ok(schedule)
    }

    /// Starts `id`'s task when it is new (refused past [`MAX_CONTEXTS`]).
    fn open_context(&mut self, id: &str, running: &mut usize) -> Result<(), ServiceError> {
        if self.contexts.contains_key(id) {
            return Ok(());
        }
        let field = self.params.context;
        if id.chars().count() > MAX_CONTEXT_ID || id.contains('\0') {
            return Err(ServiceError::invalid(
                field,
                format!("{field} must be at most {MAX_CONTEXT_ID} characters"),
            ));
        }
        if self.contexts.len() >= MAX_CONTEXTS {
            return Err(ServiceError::invalid(
                field,
                format!(
                    "A socket holds at most {MAX_CONTEXTS} contexts at once; close one (close_context) before opening another."
                ),
            ));
        }
        let speaker = match self.named.take() {
            Some((named, speaker)) if named == id => speaker,
            other => {
                self.named = other;
                self.speaker.clone().ok_or_else(|| {
                    let field = self.params.speech.voice;
                    ServiceError::invalid(
                        field,
                        format!("A context's first message must name its voice ({field})."),
                    )
                })?
            }
        };
        let (phrases_tx, phrases_rx) = mpsc::channel(PHRASE_QUEUE);
        let (stop_tx, stop_rx) = watch::channel(None);
        let cut = Arc::new(AtomicBool::new(false));
        tokio::spawn(speak::context(
            self.shared.clone(),
            speaker,
            id.to_owned(),
            phrases_rx,
            stop_rx,
            cut.clone(),
        ));
        *running += 1;
        self.contexts.insert(
            id.to_owned(),
            Context {
                buffer: Buffer::default(),
                schedule: None,
                phrases: Some(phrases_tx),
                stop: stop_tx,
                cut,
            },
        );
        Ok(())
    }

    /// Hands `phrase` to its context, waiting while it holds [`PHRASE_QUEUE`] already.
    async fn queue(&mut self, id: &str, phrase: String) {
        let Some(sender) = self.contexts.get(id).and_then(|c| c.phrases.clone()) else {
            return;
        };
        self.shared.busy.fetch_add(1, Ordering::AcqRel);
        if sender.send(speak::Work::Phrase(phrase)).await.is_err() {
            self.shared.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
