//! Choosing the device the model runs on from its name in a config.

use crate::error::{ModelError, Result};
use candle_core::Device;

/// The names [`parse_device`] accepts.
pub const DEVICE_NAMES: &str = "\"cpu\", \"cuda\" or \"cuda:N\"";

/// The device called `name`: `cpu`, `cuda` (the first GPU) or `cuda:N`. A CUDA device needs a
/// build with the `cuda` feature; without it this says so instead of failing later.
pub fn parse_device(name: &str) -> Result<Device> {
    let ordinal = match name.trim() {
        "cpu" => return Ok(Device::Cpu),
        "cuda" => 0,
        other => other
            .strip_prefix("cuda:")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| {
                ModelError::Input(format!("device {name:?}: expected {DEVICE_NAMES}"))
            })?,
    };
    if !candle_core::utils::cuda_is_available() {
        return Err(ModelError::Input(format!(
            "device {name:?}: this build has no CUDA support; rebuild with \
             `--features quester-model/cuda` (needs the CUDA toolkit)"
        )));
    }
    Device::new_cuda(ordinal).map_err(|e| ModelError::Input(format!("device {name:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_parses_and_bad_names_list_the_choices() {
        assert!(parse_device("cpu").unwrap().is_cpu());
        for bad in ["gpu", "cuda:x", "cuda:-1", ""] {
            let e = parse_device(bad).unwrap_err().to_string();
            assert!(e.contains("\"cpu\", \"cuda\" or \"cuda:N\""), "{bad}: {e}");
        }
    }

    #[test]
    fn cuda_without_the_feature_says_how_to_get_it() {
        if candle_core::utils::cuda_is_available() {
            return;
        }
        let e = parse_device("cuda:1").unwrap_err().to_string();
        assert!(e.contains("--features quester-model/cuda"), "{e}");
    }
}
