//! Continuous batching: sequences join the running batch at any token step and leave when
//! they end.
//!
//! Design. The running batch keeps the KV cache generation already uses ([`KvCache`]: one
//! time axis shared by every row, per-row key masks, per-row counts of real tokens for the
//! RoPE positions), so decoding steps are the same batched forward as [`super::generate`]'s.
//! - Admission: the waiting requests that fit (under `max_rows`, and a per-step budget of
//!   prompt tokens) are prefilled together in a small cache of their own, exactly as
//!   `generate` prefills (a prefix they all share runs once; the rest left-padded). Their rows
//!   are then appended to the running cache right-aligned: each prompt's last token lands on
//!   the running cache's last position, its earlier positions masked out for it; when the
//!   running cache is shorter than the new prompts, its own rows get masked padding positions
//!   in front. Positions come from the real-token counts, not the cache position, so a
//!   sequence's logits do not depend on where it sits on the time axis.
//! - Slot reuse: a finished row keeps its place until the next step's admission; a newcomer
//!   whose prefilled prompt fits the running time axis is written into that place in place
//!   (`KvCache::write_row`: its own positions only, right-aligned, the row's earlier positions
//!   masked for it), with no copy of the other rows. This is how a steady stream (one prompt
//!   per finished answer) runs without copying the cache per arrival.
//! - Leaving: a finished sequence is reported at once. Finished rows nobody takes are removed
//!   (`KvCache::select_rows`) once they are a quarter of the batch, or when newcomers must be
//!   appended anyway (one copy for both); a cancelled one is removed at once. Leading positions
//!   masked in every remaining row are dropped when they are a quarter of the cache, and
//!   whenever the cache grows (compaction). The cache grows when a step would overflow it.
//!
//! Trade-offs against a paged cache (vLLM's blocks with a per-sequence block table): appending
//! rows and removing them copy the whole running cache (a paged cache copies nothing; slot
//! reuse avoids most of those copies in a steady stream), and a short
//! sequence joining long ones pays for masked positions up to the longest live context until
//! the long ones leave (attention skips masked keys, but memory holds them). In exchange the
//! forward pass, the attention kernels (CPU and CUDA) and the prefix sharing stay as they are,
//! and a decoding step costs what `generate`'s does. Copies happen only when rows are appended
//! or removed, never per token.
//!
//! Prompt prefixes kept between requests (`prefix_cache_bytes` > 0, [`super::prefix_cache`]):
//! each admitted prompt's keys and values are kept; a newcomer that starts with a kept
//! prompt's tokens copies those positions and prefills only the rest, alone, and such
//! newcomers join the batch together, right-aligned like any others. Prompts longer than the
//! prefill budget (chunked) are neither kept nor served from it.
//!
//! Each sequence samples from its own seeded RNG, so its tokens do not depend on when it
//! joined or what else runs (up to float rounding between batch shapes).

use super::params::{GenerationOutput, GenerationRequest};
use super::prefix_cache::{PrefixCache, PrefixCacheCounts};
use super::sequence::{self, Sequence};
use super::{prefill, Prefill};
use crate::error::{ModelError, Result};
use crate::model::{DecodeWeights, KvCache, Model};
use crate::tokenizer::Tokenizer;
use candle_core::Tensor;
use std::collections::VecDeque;

/// Identifies a submitted request.
pub type SequenceId = u64;

/// Limits of the running batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Most sequences decoding at once.
    pub max_rows: usize,
    /// Prompt tokens prefilled per step, so one step's prefill does not stall the running rows
    /// for long: waiting prompts are admitted together up to this many tokens, and a longer
    /// prompt at the head of the queue is prefilled alone in chunks of this size, one chunk
    /// per step between decoding steps, joining when its last chunk is in.
    pub prefill_tokens: usize,
    /// Bytes of prompt keys and values kept for later prompts that start with the same tokens
    /// (see the module docs); 0 keeps none.
    pub prefix_cache_bytes: usize,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            max_rows: 32,
            prefill_tokens: 4096,
            prefix_cache_bytes: 0,
        }
    }
}

/// A request waiting for a row.
struct Waiting {
    id: SequenceId,
    prompt: Vec<u32>,
    seq: Sequence,
}

/// A long prompt prefilled a chunk per step, in a one-row cache of its own.
struct Chunking {
    waiting: Waiting,
    cache: KvCache,
}

/// A sequence in the running batch.
struct Row {
    id: SequenceId,
    /// None once finished and reported: the row stays, fed its last token, until a newcomer
    /// takes its place or it leaves (see the module docs).
    seq: Option<Sequence>,
    /// The last token of a finished sequence.
    last: u32,
    /// Which cache positions are real tokens of this sequence.
    key_mask: Vec<u32>,
    /// Real tokens of this sequence in the cache (the next token's position).
    real: u32,
}

/// The running batch: its cache, and the logits of each row's next token [rows, vocab].
struct Batch {
    cache: KvCache,
    logits: Tensor,
    rows: Vec<Row>,
}

/// How newcomers have joined the running batch so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JoinCounts {
    /// Written into a finished row's place, in place.
    pub in_place: u64,
    /// Appended (a copy of the running cache).
    pub appended: u64,
}

/// Runs generation requests as a continuous batch (see the module docs).
pub struct Scheduler<'a> {
    joins: JoinCounts,
    model: &'a Model,
    packed: Option<&'a DecodeWeights>,
    tokenizer: &'a Tokenizer,
    config: SchedulerConfig,
    eos: Vec<u32>,
    next_id: SequenceId,
    waiting: VecDeque<Waiting>,
    /// A prompt longer than the step's prefill budget, part-way through its prefill.
    chunking: Option<Chunking>,
    batch: Option<Batch>,
    /// Sequences finished without a step (`max_new_tokens` 0), reported by the next step.
    done: Vec<(SequenceId, GenerationOutput)>,
    /// Rayon's workers kept from sleeping between a step's ops (CPU generation).
    awake: Option<&'a crate::threads::AwakeWorkers>,
    /// Prompt prefixes kept between requests (`prefix_cache_bytes` > 0).
    prefix: Option<PrefixCache>,
}

impl Row {
    /// The token the next forward pass feeds.
    fn next_token(&self) -> u32 {
        self.seq.as_ref().map_or(self.last, Sequence::last_token)
    }
}

impl<'a> Scheduler<'a> {
    /// A scheduler decoding with `model`'s own tensors, or with `packed` (a snapshot of its
    /// base matrices, see [`DecodeWeights`]) when given; an error for a snapshot of another
    /// model or a `max_rows` of 0.
    pub fn new(
        model: &'a Model,
        packed: Option<&'a DecodeWeights>,
        tokenizer: &'a Tokenizer,
        config: SchedulerConfig,
    ) -> Result<Self> {
        if let Some(p) = packed {
            p.check(model)?;
        }
        if config.max_rows == 0 {
            return Err(ModelError::Input("max_rows must be at least 1".into()));
        }
        let prefix =
            (config.prefix_cache_bytes > 0).then(|| PrefixCache::new(config.prefix_cache_bytes));
        Ok(Scheduler {
            prefix,
            model,
            packed,
            tokenizer,
            config,
            eos: tokenizer.eos_ids().to_vec(),
            next_id: 0,
            waiting: VecDeque::new(),
            chunking: None,
            batch: None,
            done: Vec::new(),
            awake: None,
            joins: JoinCounts::default(),
        })
    }

    /// Keeps `awake`'s spinners going through every step (see [`crate::threads::AwakeWorkers`]).
    pub(crate) fn with_awake(mut self, awake: Option<&'a crate::threads::AwakeWorkers>) -> Self {
        self.awake = awake;
        self
    }

    /// Queues a request; an error (and nothing queued) for one generation cannot run.
    pub fn submit(&mut self, request: GenerationRequest) -> Result<SequenceId> {
        let id = self.next_id;
        sequence::validate(
            &format!("request {id}"),
            &request,
            self.model.config.vocab_size,
        )?;
        let seq = Sequence::new(&request.params, self.tokenizer)?;
        self.next_id += 1;
        if seq.is_finished() {
            self.done.push((id, seq.into_output(self.tokenizer)?));
        } else {
            self.waiting.push_back(Waiting {
                id,
                prompt: request.prompt_ids,
                seq,
            });
        }
        Ok(id)
    }

    /// True when nothing waits, runs or remains to be reported.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty()
            && self.chunking.is_none()
            && self.batch.is_none()
            && self.done.is_empty()
    }

    /// Sequences decoding now.
    pub fn running(&self) -> usize {
        self.batch
            .as_ref()
            .map_or(0, |b| b.rows.iter().filter(|r| r.seq.is_some()).count())
    }

    /// Every running sequence's generated tokens so far with their log-probs (what a
    /// streaming caller reports between steps).
    pub fn running_tokens(&self) -> Vec<(SequenceId, &[u32], &[f32])> {
        self.batch.as_ref().map_or(Vec::new(), |b| {
            b.rows
                .iter()
                .filter_map(|r| {
                    r.seq.as_ref().map(|s| {
                        let (ids, lps) = s.tokens();
                        (r.id, ids, lps)
                    })
                })
                .collect()
        })
    }

    /// Rows of the running batch, finished ones not yet removed included.
    fn rows(&self) -> usize {
        self.batch.as_ref().map_or(0, |b| b.rows.len())
    }

    /// How newcomers have joined the running batch so far.
    pub fn joins(&self) -> JoinCounts {
        self.joins
    }

    /// How kept prompt prefixes have served so far (None when none are kept).
    pub fn prefix_cache_counts(&self) -> Option<PrefixCacheCounts> {
        self.prefix.as_ref().map(|p| p.counts)
    }

    /// Requests waiting for a row (a long prompt part-way through its prefill included).
    pub fn waiting(&self) -> usize {
        self.waiting.len() + usize::from(self.chunking.is_some())
    }

    /// Drops a waiting or running sequence (its row is freed at once); false for an unknown
    /// or finished one.
    pub fn cancel(&mut self, id: SequenceId) -> Result<bool> {
        if let Some(i) = self.waiting.iter().position(|w| w.id == id) {
            self.waiting.remove(i);
            return Ok(true);
        }
        if self.chunking.as_ref().is_some_and(|c| c.waiting.id == id) {
            self.chunking = None;
            return Ok(true);
        }
        let Some(batch) = self.batch.as_ref() else {
            return Ok(false);
        };
        let Some(row) = batch
            .rows
            .iter()
            .position(|r| r.id == id && r.seq.is_some())
        else {
            return Ok(false);
        };
        let keep: Vec<usize> = (0..batch.rows.len()).filter(|&r| r != row).collect();
        self.keep_rows(&keep)?;
        Ok(true)
    }

    /// One token step: admits the waiting requests that fit, samples the next token of every
    /// running sequence, removes the finished ones (returned with their outputs) and runs the
    /// others' tokens through the model. After an error (a failed forward pass or tokenizer
    /// decode) the running sequences' states may be part-way through the step: drop the
    /// scheduler rather than step it again.
    pub fn step(&mut self) -> Result<Vec<(SequenceId, GenerationOutput)>> {
        if let Some(a) = self.awake {
            a.rearm();
        }
        self.admit()?;
        let mut out = std::mem::take(&mut self.done);
        let Some(batch) = self.batch.as_mut() else {
            return Ok(out);
        };
        let mut rows: Vec<(usize, &mut Sequence)> = batch
            .rows
            .iter_mut()
            .enumerate()
            .filter_map(|(i, r)| r.seq.as_mut().map(|s| (i, s)))
            .collect();
        sequence::advance(&batch.logits, &mut rows, self.tokenizer, &self.eos)?;
        for r in &mut batch.rows {
            if let Some(s) = r.seq.take_if(|s| s.is_finished()) {
                r.last = s.last_token();
                out.push((r.id, s.into_output(self.tokenizer)?));
            }
        }
        // Finished rows stay until the next step's admission: a newcomer may take one's place
        // there without copying the cache.
        if batch.rows.iter().all(|r| r.seq.is_none()) {
            self.batch = None;
        } else {
            decode(self.model, self.packed, batch)?;
        }
        Ok(out)
    }

    /// Removes the finished rows from the running batch.
    fn drop_finished(&mut self) -> Result<()> {
        let keep: Vec<usize> = self.batch.as_ref().map_or(Vec::new(), |b| {
            (0..b.rows.len())
                .filter(|&r| b.rows[r].seq.is_some())
                .collect()
        });
        self.keep_rows(&keep)
    }

    /// Keeps only the rows `keep` of the running batch (all gone: no batch), compacting its
    /// time axis when a quarter of it is masked in every row.
    fn keep_rows(&mut self, keep: &[usize]) -> Result<()> {
        let Some(mut batch) = self.batch.take() else {
            return Ok(());
        };
        if keep.is_empty() {
            return Ok(());
        }
        let mut old: Vec<Option<Row>> = batch.rows.drain(..).map(Some).collect();
        batch.rows = keep.iter().filter_map(|&r| old[r].take()).collect();
        let idx: Vec<u32> = keep.iter().map(|&r| r as u32).collect();
        let idx = Tensor::from_vec(idx, keep.len(), self.model.device())?;
        let t = std::time::Instant::now();
        batch.cache.select_rows(&idx)?;
        tracing::debug!(
            rows = keep.len(),
            len = batch.cache.len(),
            capacity = batch.cache.capacity(),
            ms = t.elapsed().as_secs_f64() * 1e3,
            "kv cache rows removed"
        );
        batch.logits = batch.logits.index_select(&idx, 0)?;
        let lead = batch
            .rows
            .iter()
            .map(|r| r.key_mask.iter().take_while(|&&m| m == 0).count())
            .min()
            .unwrap_or(0);
        if lead > 0 && lead * 4 >= batch.cache.len() {
            let cap = batch.cache.capacity() - lead;
            batch.cache.retime(lead, cap)?;
            for r in &mut batch.rows {
                r.key_mask.drain(..lead);
            }
        }
        self.batch = Some(batch);
        Ok(())
    }

    /// Prefills the waiting requests that fit and puts them in the running batch: into the
    /// places of finished rows where their prompts fit its time axis (in place), appended
    /// otherwise. Finished rows nobody takes leave once they are a quarter of the batch (one
    /// copy of the cache for several), or at once when newcomers are appended anyway.
    fn admit(&mut self) -> Result<()> {
        let free = self.config.max_rows.saturating_sub(self.running());
        let budget = self.config.prefill_tokens.max(1);
        if self.chunking.is_some()
            || (free > 0
                && self
                    .waiting
                    .front()
                    .is_some_and(|w| w.prompt.len() > budget))
        {
            return self.prefill_chunk(budget);
        }
        let mut take = 0;
        let mut tokens = 0;
        for w in self.waiting.iter().take(free) {
            if tokens + w.prompt.len() > budget {
                break;
            }
            take += 1;
            tokens += w.prompt.len();
        }
        if take == 0 {
            let (dead, rows) = (self.rows() - self.running(), self.rows());
            if dead > 0 && dead * 4 >= rows {
                self.drop_finished()?;
            }
            return Ok(());
        }
        let mut new: Vec<Waiting> = self.waiting.drain(..take).collect();
        if let Some(store) = self.prefix.as_mut() {
            let mut hits = Vec::new();
            let mut misses = Vec::new();
            for w in new {
                store.admitted(w.prompt.len());
                match store.lookup(&w.prompt) {
                    Some((kept, n)) => {
                        let start = kept.prefix_copy(n, w.prompt.len())?;
                        hits.push((w, start));
                    }
                    None => misses.push(w),
                }
            }
            if !hits.is_empty() {
                self.admit_from_kept(hits)?;
            }
            if misses.is_empty() {
                return Ok(());
            }
            new = misses;
        }
        let prompts: Vec<&[u32]> = new.iter().map(|w| w.prompt.as_slice()).collect();
        let longest = prompts.iter().map(|p| p.len()).max().unwrap_or(0);
        let capacity = self.capacity_with(longest, new.iter().map(|w| &w.seq));
        // The newcomers' own cache becomes the running one, or is copied into it.
        let own = if self.batch.is_some() {
            longest
        } else {
            capacity
        };
        let t = std::time::Instant::now();
        let Prefill {
            cache,
            logits,
            key_mask,
        } = prefill(self.model, self.packed, &prompts, own)?;
        tracing::debug!(
            prompts = prompts.len(),
            tokens,
            ms = t.elapsed().as_secs_f64() * 1e3,
            "prefilled"
        );
        if let Some(store) = self.prefix.as_mut() {
            for (j, (w, mask)) in new.iter().zip(&key_mask).enumerate() {
                let positions: Vec<u32> = (0u32..)
                    .zip(mask)
                    .filter(|(_, &m)| m != 0)
                    .map(|(p, _)| p)
                    .collect();
                if positions.len() == w.prompt.len() {
                    store.insert(w.prompt.clone(), cache.row_positions(j, &positions)?);
                }
            }
        }
        let rows: Vec<Row> = new
            .into_iter()
            .zip(key_mask)
            .map(|(w, key_mask)| Row {
                id: w.id,
                real: w.prompt.len() as u32,
                seq: Some(w.seq),
                last: 0,
                key_mask,
            })
            .collect();
        self.place(cache, logits, rows, capacity)
    }

    /// Prefills newcomers that start from kept prompt prefixes (`start`: those positions,
    /// copied into a one-row cache of the prompt's length), each alone from where its prefix
    /// ends, keeps each whole prompt in turn, and puts them in the running batch together.
    fn admit_from_kept(&mut self, hits: Vec<(Waiting, KvCache)>) -> Result<()> {
        let longest = hits.iter().map(|(w, _)| w.prompt.len()).max().unwrap_or(0);
        let mut joined = self.model.new_cache(hits.len(), longest)?;
        joined.set_len(longest)?;
        let mut logits = Vec::with_capacity(hits.len());
        let mut rows = Vec::with_capacity(hits.len());
        let mut seqs = Vec::with_capacity(hits.len());
        let t = std::time::Instant::now();
        for (j, (w, mut cache)) in hits.into_iter().enumerate() {
            let (done, len) = (cache.len(), w.prompt.len());
            let ids = Tensor::from_vec(
                w.prompt[done..].to_vec(),
                (1, len - done),
                self.model.device(),
            )?;
            logits.push(self.model.forward_cached_with(
                &ids,
                &[vec![1; len]],
                &[done as u32],
                &mut cache,
                self.packed,
            )?);
            joined.write_row(j, &cache, 0)?;
            if let Some(store) = self.prefix.as_mut() {
                store.insert(w.prompt.clone(), cache);
            }
            let mut key_mask = vec![0; longest - len];
            key_mask.resize(longest, 1);
            seqs.push(w.seq);
            rows.push((w.id, len, key_mask));
        }
        tracing::debug!(
            prompts = rows.len(),
            ms = t.elapsed().as_secs_f64() * 1e3,
            "prefilled from kept prefixes"
        );
        let capacity = self.capacity_with(longest, seqs.iter());
        let rows = rows
            .into_iter()
            .zip(seqs)
            .map(|((id, len, key_mask), seq)| Row {
                id,
                real: len as u32,
                seq: Some(seq),
                last: 0,
                key_mask,
            })
            .collect();
        let logits = Tensor::cat(&logits, 0)?;
        self.place(joined, logits, rows, capacity)
    }

    /// Runs the next chunk of the long prompt being prefilled (taking the queue's head first
    /// when none is); the prompt joins the running batch once its last chunk is in.
    fn prefill_chunk(&mut self, budget: usize) -> Result<()> {
        let mut c = match self.chunking.take() {
            Some(c) => c,
            None => {
                let Some(w) = self.waiting.pop_front() else {
                    return Ok(());
                };
                let cache = self.model.new_cache(1, w.prompt.len())?;
                Chunking { waiting: w, cache }
            }
        };
        let len = c.waiting.prompt.len();
        let done = c.cache.len();
        let n = (len - done).min(budget);
        let ids = Tensor::from_vec(
            c.waiting.prompt[done..done + n].to_vec(),
            (1, n),
            self.model.device(),
        )?;
        let logits = self.model.forward_cached_with(
            &ids,
            &[vec![1; done + n]],
            &[done as u32],
            &mut c.cache,
            self.packed,
        )?;
        if done + n < len {
            self.chunking = Some(c);
            return Ok(());
        }
        let capacity = self.capacity_with(len, std::iter::once(&c.waiting.seq));
        let w = c.waiting;
        let row = Row {
            id: w.id,
            real: len as u32,
            seq: Some(w.seq),
            last: 0,
            key_mask: vec![1; len],
        };
        self.place(c.cache, logits, vec![row], capacity)
    }

    /// The positions the running batch needs once newcomers (`longest`: their longest prompt)
    /// join it: the longer time axis, plus the most tokens any sequence, new or running, may
    /// still generate.
    fn capacity_with<'s>(
        &self,
        longest: usize,
        newcomers: impl Iterator<Item = &'s Sequence>,
    ) -> usize {
        let old_rows = self.batch.as_ref().map_or(&[][..], |b| &b.rows[..]);
        let remaining = newcomers
            .map(Sequence::remaining)
            .chain(
                old_rows
                    .iter()
                    .filter_map(|r| r.seq.as_ref().map(Sequence::remaining)),
            )
            .max()
            .unwrap_or(0);
        let running_len = self.batch.as_ref().map_or(0, |b| b.cache.len());
        running_len.max(longest) + remaining
    }

    /// Makes the newcomers' own cache (grown to `capacity` positions) the running batch.
    fn start_batch(
        &mut self,
        mut cache: KvCache,
        logits: Tensor,
        rows: Vec<Row>,
        capacity: usize,
    ) -> Result<()> {
        if cache.capacity() < capacity {
            cache.retime(0, capacity)?;
        }
        self.batch = Some(Batch {
            cache,
            logits,
            rows,
        });
        Ok(())
    }

    /// Puts prefilled newcomers (their own cache and last-token logits, one row each) in the
    /// running batch: into finished rows' places where they fit its time axis, appended
    /// otherwise; the batch itself when there is none. `capacity`: the positions the batch
    /// will need.
    fn place(
        &mut self,
        cache: KvCache,
        logits: Tensor,
        mut rows: Vec<Row>,
        capacity: usize,
    ) -> Result<()> {
        let Some(batch) = self.batch.as_mut() else {
            return self.start_batch(cache, logits, rows, capacity);
        };
        // Finished rows' places, taken in place while the prefilled prompts fit the time axis.
        let mut reused = 0;
        if cache.len() <= batch.cache.len() {
            let dead: Vec<usize> = (0..batch.rows.len())
                .filter(|&r| batch.rows[r].seq.is_none())
                .collect();
            if !dead.is_empty() && !batch.logits.is_contiguous() {
                batch.logits = batch.logits.contiguous()?;
            }
            let pad = batch.cache.len() - cache.len();
            for (j, (&d, mut row)) in dead
                .iter()
                .zip(rows.drain(..dead.len().min(rows.len())))
                .enumerate()
            {
                batch.cache.write_row(d, &cache, j)?;
                batch
                    .logits
                    .slice_set(&logits.narrow(0, j, 1)?.contiguous()?, 0, d)?;
                row.key_mask.splice(0..0, std::iter::repeat_n(0, pad));
                batch.rows[d] = row;
                reused += 1;
            }
        }
        self.joins.in_place += reused as u64;
        if rows.is_empty() {
            let (dead, all) = (self.rows() - self.running(), self.rows());
            if dead > 0 && dead * 4 >= all {
                self.drop_finished()?;
            }
            return Ok(());
        }
        // The rest is appended; finished rows leave in the same copy.
        let (cache, logits) = if reused > 0 {
            let idx: Vec<u32> = (reused..reused + rows.len()).map(|j| j as u32).collect();
            let idx = Tensor::from_vec(idx, rows.len(), self.model.device())?;
            let mut rest = cache;
            rest.select_rows(&idx)?;
            (rest, logits.index_select(&idx, 0)?)
        } else {
            (cache, logits)
        };
        self.drop_finished()?;
        let Some(batch) = self.batch.as_mut() else {
            // Every running row had finished: the newcomers alone are the batch.
            return self.start_batch(cache, logits, rows, capacity);
        };
        let t = std::time::Instant::now();
        let (mine, theirs) = batch.cache.append_rows(&cache, capacity)?;
        tracing::debug!(
            rows = batch.rows.len(),
            new = rows.len(),
            len = batch.cache.len(),
            capacity = batch.cache.capacity(),
            ms = t.elapsed().as_secs_f64() * 1e3,
            "kv cache rows appended"
        );
        self.joins.appended += rows.len() as u64;
        batch.logits = Tensor::cat(&[&batch.logits, &logits], 0)?;
        let pad = |m: &mut Vec<u32>, n: usize| {
            m.splice(0..0, std::iter::repeat_n(0, n));
        };
        for r in &mut batch.rows {
            pad(&mut r.key_mask, mine);
        }
        for mut r in rows {
            pad(&mut r.key_mask, theirs);
            batch.rows.push(r);
        }
        Ok(())
    }
}

/// Runs every row's last token through the model, growing the cache first when it is full.
fn decode(model: &Model, packed: Option<&DecodeWeights>, batch: &mut Batch) -> Result<()> {
    let cache = &mut batch.cache;
    if cache.len() + 1 > cache.capacity() {
        let more = batch
            .rows
            .iter()
            .filter_map(|r| r.seq.as_ref().map(Sequence::remaining))
            .max()
            .unwrap_or(1);
        // Positions every live row masks (rows that joined in finished rows' places leave
        // such positions in front) are dropped in the same copy.
        let lead = batch
            .rows
            .iter()
            .filter(|r| r.seq.is_some())
            .map(|r| r.key_mask.iter().take_while(|&&m| m == 0).count())
            .min()
            .unwrap_or(0);
        let t = std::time::Instant::now();
        cache.retime(lead, cache.len() - lead + more.max(1))?;
        tracing::debug!(
            rows = batch.rows.len(),
            len = cache.len(),
            capacity = cache.capacity(),
            lead,
            ms = t.elapsed().as_secs_f64() * 1e3,
            "kv cache grown"
        );
        for r in &mut batch.rows {
            r.key_mask.drain(..lead.min(r.key_mask.len()));
        }
    }
    let next: Vec<u32> = batch.rows.iter().map(Row::next_token).collect();
    let masks: Vec<Vec<u32>> = batch
        .rows
        .iter()
        .map(|r| {
            let mut m = Vec::with_capacity(r.key_mask.len() + 1);
            m.extend_from_slice(&r.key_mask);
            m.push(1);
            m
        })
        .collect();
    let real: Vec<u32> = batch.rows.iter().map(|r| r.real).collect();
    let step = Tensor::from_vec(next, (batch.rows.len(), 1), model.device())?;
    let t = std::time::Instant::now();
    batch.logits = model.forward_cached_with(&step, &masks, &real, cache, packed)?;
    tracing::trace!(
        rows = batch.rows.len(),
        len = cache.len(),
        ms = t.elapsed().as_secs_f64() * 1e3,
        "decoded"
    );
    // The rows' state moves on only once the forward pass has succeeded.
    for (r, m) in batch.rows.iter_mut().zip(masks) {
        r.key_mask = m;
        r.real += 1;
    }
    Ok(())
}
