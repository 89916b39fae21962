//! The webhook deliveries' task: rounds of [`WebhookService::deliver_round`] while there is
//! work, and between them a wait for the next commit of events (on any instance) or a
//! second, whichever comes first (a retry falls due without a commit). A commit's wake-up
//! waits 20 ms more (`GATHER`), so that the commits of a burst go out in one round rather
//! than a round (two transactions) each. It runs beside the background worker, so a slow
//! receiver holds no other job.

use fleetdesk_pg::PgStore;
use fleetdesk_webhooks::WebhookService;
use jiff::Timestamp;
use std::time::Duration;
use tokio::sync::watch;

/// The longest wait between rounds with nothing to do.
const IDLE_WAIT: Duration = Duration::from_secs(1);
/// The wait after a round that failed (the database is away).
const FAILED_WAIT: Duration = Duration::from_secs(5);
/// How long a commit's wake-up gathers the commits that follow it before a round.
const GATHER: Duration = Duration::from_millis(20);

/// The running task: [`Deliveries::stop`] ends it between rounds.
pub struct Deliveries {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Deliveries {
    /// Starts delivering with `service`, woken by `store`'s commits.
    pub fn spawn(service: WebhookService, store: &PgStore) -> Deliveries {
        let (stop, mut stopped) = watch::channel(false);
        let mut commits = store.commits();
        let task = tokio::spawn(async move {
            loop {
                if *stopped.borrow() {
                    return;
                }
                let wait = match service.deliver_round(Timestamp::now, jitter).await {
                    Ok(round) if !round.idle() => {
                        tracing::debug!(?round, "delivered webhooks");
                        continue;
                    }
                    Ok(_) => IDLE_WAIT,
                    Err(e) => {
                        tracing::warn!(error = %e, "a round of webhook deliveries failed");
                        FAILED_WAIT
                    }
                };
                tokio::select! {
                    _ = stopped.changed() => return,
                    _ = commits.changed() => tokio::time::sleep(GATHER).await,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        });
        Deliveries { stop, task }
    }

    /// Stops after the round in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// A retry's jitter, per mille, at random (the middle when no random source answers).
fn jitter() -> u16 {
    let mut bytes = [0u8; 2];
    match getrandom::fill(&mut bytes) {
        Ok(()) => u16::from_le_bytes(bytes) % 1000,
        Err(_) => 500,
    }
}
