//! Streaming, crash-safe safetensors writer and a strict reader.
//!
//! A file is written to a temporary sibling, flushed to disk (fsync), renamed over the target and
//! the directory is synced, so a reader sees either the old file or the complete new one, never a
//! torn write. Tensors are streamed one by one, so a checkpoint never needs a second in-memory copy
//! of the model. Every I/O error names the path it concerns.

use super::CheckpointError;
use candle_core::{DType, Device, Tensor};
use safetensors::Dtype;
use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Data of one tensor to write.
pub enum Payload<'a> {
    /// A candle tensor (any device; written in its dtype, which must be f32, bf16 or f16).
    Tensor(Tensor),
    /// A plain f32 buffer with its shape.
    F32(&'a [f32], Vec<usize>),
}

impl Payload<'_> {
    fn dtype(&self) -> Result<Dtype, String> {
        match self {
            Payload::F32(..) => Ok(Dtype::F32),
            Payload::Tensor(t) => match t.dtype() {
                DType::F32 => Ok(Dtype::F32),
                DType::BF16 => Ok(Dtype::BF16),
                DType::F16 => Ok(Dtype::F16),
                other => Err(format!("dtype {other:?} is not supported (f32, bf16, f16)")),
            },
        }
    }

    fn shape(&self) -> Vec<usize> {
        match self {
            Payload::F32(_, s) => s.clone(),
            Payload::Tensor(t) => t.dims().to_vec(),
        }
    }

    fn byte_len(&self) -> usize {
        match self {
            Payload::F32(d, _) => d.len() * 4,
            Payload::Tensor(t) => t.elem_count() * t.dtype().size_in_bytes(),
        }
    }

    /// Streams the little-endian bytes into `w` in bounded pieces.
    fn write_to(&self, w: &mut impl Write) -> Result<(), WriteFail> {
        const PIECE: usize = 1 << 16;
        let mut buf = Vec::with_capacity(PIECE * 4);
        match self {
            Payload::F32(d, _) => write_f32s(w, d, &mut buf),
            Payload::Tensor(t) => {
                let flat = t
                    .flatten_all()
                    .and_then(|t| t.to_device(&Device::Cpu))
                    .map_err(WriteFail::Candle)?;
                match t.dtype() {
                    DType::F32 => {
                        let v = flat.to_vec1::<f32>().map_err(WriteFail::Candle)?;
                        write_f32s(w, &v, &mut buf)
                    }
                    DType::BF16 => {
                        let v = flat.to_vec1::<half::bf16>().map_err(WriteFail::Candle)?;
                        for piece in v.chunks(PIECE) {
                            buf.clear();
                            piece.iter().for_each(|x| buf.extend(x.to_le_bytes()));
                            w.write_all(&buf).map_err(WriteFail::Io)?;
                        }
                        Ok(())
                    }
                    DType::F16 => {
                        let v = flat.to_vec1::<half::f16>().map_err(WriteFail::Candle)?;
                        for piece in v.chunks(PIECE) {
                            buf.clear();
                            piece.iter().for_each(|x| buf.extend(x.to_le_bytes()));
                            w.write_all(&buf).map_err(WriteFail::Io)?;
                        }
                        Ok(())
                    }
                    // Rejected earlier by `dtype()`.
                    other => Err(WriteFail::Candle(candle_core::Error::Msg(format!(
                        "unsupported dtype {other:?}"
                    )))),
                }
            }
        }
    }
}

fn write_f32s(w: &mut impl Write, d: &[f32], buf: &mut Vec<u8>) -> Result<(), WriteFail> {
    for piece in d.chunks(1 << 16) {
        buf.clear();
        piece.iter().for_each(|x| buf.extend(x.to_le_bytes()));
        w.write_all(buf).map_err(WriteFail::Io)?;
    }
    Ok(())
}

enum WriteFail {
    Io(std::io::Error),
    Candle(candle_core::Error),
}

/// Writes `tensors` (names must be unique) and string `metadata` to `path` atomically.
pub fn write_atomic(
    path: &Path,
    tensors: Vec<(String, Payload<'_>)>,
    metadata: HashMap<String, String>,
) -> Result<(), CheckpointError> {
    let mut tensors = tensors;
    // Data is laid out in name order, the order readers validate offsets in.
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(w) = tensors.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(CheckpointError::Invalid {
            path: path.to_path_buf(),
            what: format!("tensor name `{}` given twice", w[0].0),
        });
    }
    let mut header = serde_json::Map::new();
    let mut offset = 0usize;
    for (name, p) in &tensors {
        let dtype = p.dtype().map_err(|what| CheckpointError::Invalid {
            path: path.to_path_buf(),
            what: format!("tensor `{name}`: {what}"),
        })?;
        let len = p.byte_len();
        header.insert(
            name.clone(),
            serde_json::json!({
                "dtype": dtype.to_string(),
                "shape": p.shape(),
                "data_offsets": [offset, offset + len],
            }),
        );
        offset += len;
    }
    let meta: BTreeMap<String, String> = metadata.into_iter().collect();
    header.insert("__metadata__".into(), serde_json::json!(meta));
    let mut header_bytes = serde_json::to_vec(&serde_json::Value::Object(header)).map_err(|e| {
        CheckpointError::Invalid {
            path: path.to_path_buf(),
            what: format!("cannot encode header: {e}"),
        }
    })?;
    // The data section starts 8-byte aligned, padded with spaces as the format allows.
    while header_bytes.len() % 8 != 0 {
        header_bytes.push(b' ');
    }

    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| io_err("create directory", &dir, e))?;
    let tmp = temp_sibling(path, &dir);
    let result = (|| {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_err("create", &tmp, e))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let fail = |f: WriteFail, name: &str| match f {
            WriteFail::Io(e) => io_err("write", &tmp, e),
            WriteFail::Candle(source) => CheckpointError::Candle {
                name: name.to_string(),
                source,
            },
        };
        w.write_all(&(header_bytes.len() as u64).to_le_bytes())
            .and_then(|_| w.write_all(&header_bytes))
            .map_err(|e| io_err("write", &tmp, e))?;
        for (name, p) in &tensors {
            p.write_to(&mut w).map_err(|f| fail(f, name))?;
        }
        let file = w
            .into_inner()
            .map_err(|e| io_err("write", &tmp, e.into_error()))?;
        file.sync_all().map_err(|e| io_err("sync", &tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| io_err("rename into place", path, e))?;
        // Make the rename itself durable.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err("sync directory", &dir, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn temp_sibling(path: &Path, dir: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{base}.tmp-{}-{n}", std::process::id()))
}

pub(crate) fn io_err(op: &'static str, path: &Path, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// A safetensors file read fully into memory.
pub struct StFile {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl StFile {
    /// Reads and validates the file.
    pub fn read(path: &Path) -> Result<Self, CheckpointError> {
        let bytes = std::fs::read(path).map_err(|e| io_err("read", path, e))?;
        let f = Self {
            path: path.to_path_buf(),
            bytes,
        };
        f.view()?;
        Ok(f)
    }

    fn view(&self) -> Result<safetensors::SafeTensors<'_>, CheckpointError> {
        safetensors::SafeTensors::deserialize(&self.bytes).map_err(|e| CheckpointError::Invalid {
            path: self.path.clone(),
            what: format!("not a valid safetensors file: {e}"),
        })
    }

    /// The `__metadata__` strings.
    pub fn metadata(&self) -> Result<HashMap<String, String>, CheckpointError> {
        let (_, meta) = safetensors::SafeTensors::read_metadata(&self.bytes).map_err(|e| {
            CheckpointError::Invalid {
                path: self.path.clone(),
                what: format!("not a valid safetensors file: {e}"),
            }
        })?;
        Ok(meta.metadata().clone().unwrap_or_default())
    }

    /// Names of all tensors.
    pub fn names(&self) -> Result<Vec<String>, CheckpointError> {
        Ok(self.view()?.names().into_iter().map(String::from).collect())
    }

    /// One tensor as a CPU candle tensor (bit-exact copy of the stored bytes).
    pub fn tensor(&self, name: &str) -> Result<Tensor, CheckpointError> {
        let st = self.view()?;
        let v = st.tensor(name).map_err(|e| CheckpointError::Invalid {
            path: self.path.clone(),
            what: format!("tensor `{name}`: {e}"),
        })?;
        let dtype = DType::try_from(v.dtype()).map_err(|source| CheckpointError::Candle {
            name: name.to_string(),
            source,
        })?;
        Tensor::from_raw_buffer(v.data(), dtype, v.shape(), &Device::Cpu).map_err(|source| {
            CheckpointError::Candle {
                name: name.to_string(),
                source,
            }
        })
    }

    /// One f32 tensor as a plain vector with its shape.
    pub fn f32_vec(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>), CheckpointError> {
        let st = self.view()?;
        let v = st.tensor(name).map_err(|e| CheckpointError::Invalid {
            path: self.path.clone(),
            what: format!("tensor `{name}`: {e}"),
        })?;
        if v.dtype() != Dtype::F32 {
            return Err(CheckpointError::Invalid {
                path: self.path.clone(),
                what: format!("tensor `{name}` has dtype {}, expected F32", v.dtype()),
            });
        }
        let data = v
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok((data, v.shape().to_vec()))
    }
}
