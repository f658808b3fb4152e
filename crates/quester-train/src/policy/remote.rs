//! Training with rollouts sampled elsewhere: [`RemoteRolloutPolicy`] trains the trainer's own
//! policy and has a [`RolloutSampler`] (servers reached over HTTP, built above this crate)
//! generate. Before the first generation after a change of the weights (the start, an update,
//! a checkpoint load), the adapter is written as PEFT and loaded into the sampler under a new
//! version name, and requests name that version: a rollout never mixes weights.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    ChatMessage, GenRequest, Generation, LossValue, Policy, TextCodec, TrainSeq, TrainablePolicy,
    UpdateStats,
};
use crate::error::TrainError;

/// What samples rollouts away from the trainer: generates from token-id prompts it renders
/// with the trainer's codec, and takes the trainer's adapters.
pub trait RolloutSampler: Send {
    /// Generates, as [`Policy::generate`]; the generations' token ids are the ones sampled.
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError>;

    /// Loads the PEFT adapter in `dir` under `name` everywhere it samples, and names it in
    /// the requests from now on; fails when any server did not take it.
    fn load_adapter(&mut self, dir: &Path, name: &str) -> Result<(), TrainError>;
}

/// The trainer's policy, with its rollouts sampled by a [`RolloutSampler`].
pub struct RemoteRolloutPolicy {
    trainer: Box<dyn TrainablePolicy>,
    /// None while handed over to sample ahead of the updates (then the trainer's own engine
    /// answers `generate`: evaluations).
    sampler: Option<Box<dyn RolloutSampler>>,
    /// Where adapters are written for the sampler to read (it must see the same path).
    adapters: PathBuf,
    /// The version last loaded into the sampler.
    version: u64,
    /// Whether the sampler has the trainer's current weights.
    synced: bool,
    /// Seconds of syncs not yet reported.
    sync_seconds: f64,
}

impl RemoteRolloutPolicy {
    /// `trainer` trained, `sampler` sampling; adapters are written under `adapters`.
    pub fn new(
        trainer: Box<dyn TrainablePolicy>,
        sampler: Box<dyn RolloutSampler>,
        adapters: &Path,
    ) -> Self {
        Self {
            trainer,
            sampler: Some(sampler),
            adapters: adapters.to_path_buf(),
            version: 0,
            synced: false,
            sync_seconds: 0.0,
        }
    }

    /// The trained policy itself (its own engine generates, for comparisons).
    pub fn trainer_mut(&mut self) -> &mut dyn TrainablePolicy {
        self.trainer.as_mut()
    }

    /// The adapter version the sampler has (0: none yet).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Writes the current adapter and loads it into the sampler under the next version; the
    /// previous version's files are removed once the new one is loaded.
    fn sync(&mut self) -> Result<(), TrainError> {
        let version = self.version + 1;
        let dir = self.adapters.join(format!("policy-v{version}"));
        crate::run_dir::remove_dir_if_present(&dir)?;
        let t = std::time::Instant::now();
        let Some(sampler) = self.sampler.as_mut() else {
            return Err(TrainError::Policy(
                "the rollout sampler is handed over to sample ahead".into(),
            ));
        };
        self.trainer.export_adapter(&dir)?;
        sampler.load_adapter(&dir, &format!("policy-v{version}"))?;
        let seconds = t.elapsed().as_secs_f64();
        self.sync_seconds += seconds;
        tracing::info!(version, seconds, "adapter loaded into the rollout servers");
        let old = self.adapters.join(format!("policy-v{}", self.version));
        if self.version > 0 {
            crate::run_dir::remove_dir_if_present(&old)?;
        }
        self.version = version;
        self.synced = true;
        Ok(())
    }
}

impl Policy for RemoteRolloutPolicy {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        if self.sampler.is_none() {
            return self.trainer.generate(requests);
        }
        if !self.synced {
            self.sync()?;
        }
        match self.sampler.as_mut() {
            Some(sampler) => sampler.generate(requests),
            None => self.trainer.generate(requests),
        }
    }

    fn text_codec(&self) -> Option<Arc<dyn TextCodec>> {
        self.trainer.text_codec()
    }

    fn encode(
        &mut self,
        messages: &[ChatMessage],
        response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError> {
        self.trainer.encode(messages, response_prefix)
    }

    /// Another engine sampled: its log-probs are not the trainer's to the last bit, so the
    /// trainer rescores rather than taking them as its own.
    fn logprobs_are_trainers(&self) -> bool {
        false
    }

    fn take_weight_sync_seconds(&mut self) -> f64 {
        std::mem::take(&mut self.sync_seconds)
    }
}

impl TrainablePolicy for RemoteRolloutPolicy {
    fn update(
        &mut self,
        batch: &[TrainSeq<'_>],
        loss_fn: &mut dyn FnMut(&[Vec<f64>]) -> LossValue,
        entropy_coef: f64,
    ) -> Result<UpdateStats, TrainError> {
        let stats = self.trainer.update(batch, loss_fn, entropy_coef)?;
        if !stats.skipped_nonfinite {
            self.synced = false;
        }
        Ok(stats)
    }

    fn score(&mut self, batch: &[TrainSeq<'_>]) -> Result<Vec<Vec<f64>>, TrainError> {
        self.trainer.score(batch)
    }

    fn reference_logprobs(
        &mut self,
        batch: &[TrainSeq<'_>],
    ) -> Result<Option<Vec<Vec<f64>>>, TrainError> {
        self.trainer.reference_logprobs(batch)
    }

    fn save(&self, dir: &Path) -> Result<(), TrainError> {
        self.trainer.save(dir)
    }

    fn load(&mut self, dir: &Path) -> Result<(), TrainError> {
        self.trainer.load(dir)?;
        self.synced = false;
        Ok(())
    }

    fn export_adapter(&self, dir: &Path) -> Result<(), TrainError> {
        self.trainer.export_adapter(dir)
    }

    fn take_rollout_sampler(&mut self) -> Option<(Box<dyn RolloutSampler>, PathBuf)> {
        let sampler = self.sampler.take()?;
        // The servers will hold other weights than the ones synced last.
        self.synced = false;
        Some((sampler, self.adapters.clone()))
    }

    fn restore_rollout_sampler(&mut self, sampler: Box<dyn RolloutSampler>) {
        self.sampler = Some(sampler);
    }
}
