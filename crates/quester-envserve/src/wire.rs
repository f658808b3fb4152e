//! Reading OpenEnv's client messages: the WebSocket envelope (`{"type", "data"}`), reset
//! parameters and actions. Every malformed input becomes a `RequestError`, never a panic.

use crate::error::RequestError;
use quester_envs::episode::json_to_toml;
use serde_json::{Map, Value};

/// The action's one required field: the model's whole response text.
pub const ACTION_FIELD: &str = "message";

/// Longest `episode_id` OpenEnv's `ResetRequest` accepts.
pub const MAX_EPISODE_ID: usize = 255;

/// One client message on `/ws`.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Reset(ResetParams),
    Step(String),
    State,
    Close,
}

/// What a reset asks for. Keys other than `seed` and `episode_id` are env settings for this
/// episode (on top of the server's `--set` ones).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResetParams {
    pub seed: Option<u64>,
    pub episode_id: Option<String>,
    pub settings: toml::Table,
}

/// Parses one text frame.
pub fn parse_message(text: &str) -> Result<Incoming, RequestError> {
    let value: Value = serde_json::from_str(text).map_err(RequestError::InvalidJson)?;
    let Value::Object(mut msg) = value else {
        return Err(RequestError::validation(
            &[],
            "model_type",
            "a message must be a JSON object",
        ));
    };
    let kind = match msg.remove("type") {
        Some(Value::String(s)) => s,
        Some(other) => return Err(RequestError::UnknownType(other.to_string())),
        None => String::new(),
    };
    // OpenEnv's message models forbid extra fields; so do we, to catch misspelt keys.
    let data = msg.remove("data");
    if let Some(extra) = msg.keys().next() {
        return Err(RequestError::validation(
            &[extra],
            "extra_forbidden",
            "Extra inputs are not permitted",
        ));
    }
    match kind.as_str() {
        "reset" => {
            let data = match data {
                None => Map::new(),
                Some(d) => object(d, &["data"])?,
            };
            Ok(Incoming::Reset(parse_reset(data)?))
        }
        "step" => {
            let Some(data) = data else {
                return Err(RequestError::validation(
                    &["data"],
                    "missing",
                    "Field required",
                ));
            };
            Ok(Incoming::Step(parse_action(
                object(data, &["data"])?,
                &["data"],
            )?))
        }
        "state" | "close" => {
            if data.is_some() {
                return Err(RequestError::validation(
                    &["data"],
                    "extra_forbidden",
                    "Extra inputs are not permitted",
                ));
            }
            Ok(if kind == "state" {
                Incoming::State
            } else {
                Incoming::Close
            })
        }
        _ => Err(RequestError::UnknownType(kind)),
    }
}

fn object(value: Value, loc: &[&str]) -> Result<Map<String, Value>, RequestError> {
    match value {
        Value::Object(m) => Ok(m),
        _ => Err(RequestError::validation(
            loc,
            "dict_type",
            "Input should be a valid dictionary",
        )),
    }
}

/// Reads reset parameters (the WebSocket `data` or the HTTP body).
pub fn parse_reset(mut data: Map<String, Value>) -> Result<ResetParams, RequestError> {
    let seed = match data.remove("seed") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            RequestError::validation(
                &["seed"],
                "int_type",
                "Input should be a non-negative integer",
            )
        })?),
    };
    let episode_id = match data.remove("episode_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.chars().count() <= MAX_EPISODE_ID => Some(s),
        Some(Value::String(_)) => {
            return Err(RequestError::validation(
                &["episode_id"],
                "string_too_long",
                format!("String should have at most {MAX_EPISODE_ID} characters"),
            ))
        }
        Some(_) => {
            return Err(RequestError::validation(
                &["episode_id"],
                "string_type",
                "Input should be a valid string",
            ))
        }
    };
    let mut settings = toml::Table::new();
    for (key, value) in data {
        let v = json_to_toml(value).ok_or_else(|| {
            RequestError::validation(
                &[&key],
                "setting_type",
                "an env setting must be a string, number, boolean, list or table (no null)",
            )
        })?;
        settings.insert(key, v);
    }
    Ok(ResetParams {
        seed,
        episode_id,
        settings,
    })
}

/// Reads an action object: `message` (a string) and an optional `metadata` object, as
/// OpenEnv's `Action` base class has it; any other key is an error.
pub fn parse_action(mut action: Map<String, Value>, loc: &[&str]) -> Result<String, RequestError> {
    match action.remove("metadata") {
        None | Some(Value::Object(_)) => {}
        Some(_) => {
            return Err(RequestError::validation(
                &field_loc(loc, "metadata"),
                "dict_type",
                "Input should be a valid dictionary",
            ))
        }
    }
    let message = take_string(&mut action, ACTION_FIELD, loc)?;
    no_other_fields(&action, loc)?;
    Ok(message)
}

fn field_loc<'a>(loc: &[&'a str], field: &'a str) -> Vec<&'a str> {
    loc.iter().copied().chain([field]).collect()
}

/// Removes the required string field `field` of the object at `loc`, with pydantic's errors
/// when it is missing or not a string.
pub fn take_string(
    object: &mut Map<String, Value>,
    field: &str,
    loc: &[&str],
) -> Result<String, RequestError> {
    match object.remove(field) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(RequestError::validation(
            &field_loc(loc, field),
            "string_type",
            "Input should be a valid string",
        )),
        None => Err(RequestError::validation(
            &field_loc(loc, field),
            "missing",
            "Field required",
        )),
    }
}

/// An error naming the first field left in the object at `loc` (every known one removed).
pub fn no_other_fields(object: &Map<String, Value>, loc: &[&str]) -> Result<(), RequestError> {
    match object.keys().next() {
        Some(extra) => Err(RequestError::validation(
            &field_loc(loc, extra),
            "extra_forbidden",
            "Extra inputs are not permitted",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn code(text: &str) -> &'static str {
        parse_message(text).unwrap_err().code().as_str()
    }

    #[test]
    fn messages_parse_into_their_kinds() {
        assert_eq!(
            parse_message(r#"{"type":"step","data":{"message":"<action>up</action>"}}"#).unwrap(),
            Incoming::Step("<action>up</action>".into())
        );
        assert_eq!(
            parse_message(r#"{"type":"reset"}"#).unwrap(),
            Incoming::Reset(ResetParams::default())
        );
        let Incoming::Reset(p) =
            parse_message(r#"{"type":"reset","data":{"seed":7,"episode_id":"e","num_boxes":2}}"#)
                .unwrap()
        else {
            panic!("not a reset");
        };
        assert_eq!((p.seed, p.episode_id.as_deref()), (Some(7), Some("e")));
        assert_eq!(p.settings["num_boxes"].as_integer(), Some(2));
        assert_eq!(
            parse_message(r#"{"type":"state"}"#).unwrap(),
            Incoming::State
        );
        assert_eq!(
            parse_message(r#"{"type":"close"}"#).unwrap(),
            Incoming::Close
        );
    }

    #[test]
    fn bad_messages_get_openenvs_codes() {
        assert_eq!(code("{not json"), "INVALID_JSON");
        assert_eq!(code(r#"{"type":"dance"}"#), "UNKNOWN_TYPE");
        assert_eq!(code(r#"{"data":{}}"#), "UNKNOWN_TYPE");
        assert_eq!(code("[1,2]"), "VALIDATION_ERROR");
        assert_eq!(code(r#"{"type":"step"}"#), "VALIDATION_ERROR");
        assert_eq!(
            code(r#"{"type":"step","data":{"message":5}}"#),
            "VALIDATION_ERROR"
        );
        assert_eq!(
            code(r#"{"type":"step","data":{"msg":"up"}}"#),
            "VALIDATION_ERROR"
        );
        assert_eq!(code(r#"{"type":"step","data":"up"}"#), "VALIDATION_ERROR");
        assert_eq!(
            code(r#"{"type":"reset","data":{"seed":-1}}"#),
            "VALIDATION_ERROR"
        );
        assert_eq!(
            code(r#"{"type":"reset","data":{"x":null}}"#),
            "VALIDATION_ERROR"
        );
        assert_eq!(code(r#"{"type":"state","extra":1}"#), "VALIDATION_ERROR");
        let long = "e".repeat(MAX_EPISODE_ID + 1);
        let msg = format!(r#"{{"type":"reset","data":{{"episode_id":"{long}"}}}}"#);
        assert_eq!(
            parse_message(&msg).unwrap_err().code(),
            ErrorCode::ValidationError
        );
    }

    #[test]
    fn validation_errors_name_the_field() {
        let data = parse_message(r#"{"type":"step","data":{"message":[1]}}"#)
            .unwrap_err()
            .to_data();
        assert_eq!(data["code"], "VALIDATION_ERROR");
        assert_eq!(
            data["errors"][0]["loc"],
            serde_json::json!(["data", "message"])
        );
    }
}
