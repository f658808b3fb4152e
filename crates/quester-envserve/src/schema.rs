//! JSON Schemas of the action, observation and state (`GET /schema`), and the OpenAPI document
//! (`GET /openapi.json`) that `openenv validate` reads the server's version and mode from.

use crate::config::Mode;
use crate::wire::ACTION_FIELD;
use serde_json::{json, Value};

/// The HTTP API's version: OpenEnv's validator files 1.x servers under `openenv-http/1.x`.
pub const API_VERSION: &str = "1.0.0";

pub fn action_schema() -> Value {
    json!({
        "title": "QuesterAction",
        "description": "The model's whole response; the env parses its action from it.",
        "type": "object",
        "properties": {
            ACTION_FIELD: {"title": "Message", "type": "string",
                           "description": "The model's response text"},
            "metadata": {"title": "Metadata", "type": "object", "additionalProperties": true},
        },
        "required": [ACTION_FIELD],
        "additionalProperties": false,
    })
}

pub fn observation_schema() -> Value {
    json!({
        "title": "QuesterObservation",
        "type": "object",
        "properties": {
            "text": {"title": "Text", "type": "string",
                     "description": "The env's observation text"},
            "valid_actions": {
                "title": "Valid Actions",
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "description": "The admissible actions, where the env lists them",
            },
            "done": {"title": "Done", "type": "boolean", "default": false},
            "reward": {"title": "Reward", "anyOf": [{"type": "number"}, {"type": "null"}]},
            "metadata": {
                "title": "Metadata",
                "type": "object",
                "description": "env, episode_id, seed, step_count; after a step also won, \
                                valid and the env's info; at the end the outcome",
                "additionalProperties": true,
            },
        },
        "required": ["text"],
    })
}

pub fn state_schema() -> Value {
    json!({
        "title": "QuesterState",
        "type": "object",
        "properties": {
            "episode_id": {"title": "Episode Id", "anyOf": [{"type": "string"}, {"type": "null"}]},
            "step_count": {"title": "Step Count", "type": "integer", "minimum": 0},
            "env": {"title": "Env", "type": "string"},
            "max_turns": {"title": "Max Turns", "type": "integer"},
            "seed": {"title": "Seed", "type": "integer"},
            "done": {"title": "Done", "type": "boolean"},
            "won": {"title": "Won", "type": "boolean"},
            "total_reward": {"title": "Total Reward", "type": "number"},
        },
        "additionalProperties": true,
    })
}

/// `GET /schema`'s body (no `reset_observation`: reset observations have the same shape).
pub fn schemas() -> Value {
    json!({
        "action": action_schema(),
        "observation": observation_schema(),
        "state": state_schema(),
    })
}

fn op(summary: &str, body: Option<Value>) -> Value {
    let mut op = json!({
        "summary": summary,
        "responses": {"200": {"description": "OK",
                              "content": {"application/json": {"schema": {"type": "object"}}}}},
    });
    if let Some(schema) = body {
        op["requestBody"] = json!({"content": {"application/json": {"schema": schema}}});
    }
    op
}

/// The OpenAPI document; simulation mode lists `/reset`, `/step` and `/state`, production mode
/// does not (the validator checks that the set matches the mode).
pub fn openapi(mode: Mode) -> Value {
    let mut paths = json!({
        "/health": {"get": op("Health check", None)},
        "/metadata": {"get": op("Environment metadata", None)},
        "/schema": {"get": op("Action, observation and state schemas", None)},
        "/mcp": {"post": op("MCP JSON-RPC: tools reset, step, state", Some(json!({"type": "object"})))},
    });
    if mode == Mode::Simulation {
        let reset_body = json!({
            "type": "object",
            "properties": {"seed": {"type": "integer", "minimum": 0},
                           "episode_id": {"type": "string", "maxLength": 255}},
            "additionalProperties": true,
        });
        let step_body = json!({
            "type": "object",
            "properties": {"action": action_schema(), "seed": {"type": "integer", "minimum": 0}},
            "required": ["action"],
            "additionalProperties": true,
        });
        paths["/reset"] = json!({"post": op("Reset a fresh environment", Some(reset_body))});
        paths["/step"] = json!({"post": op("One step on a fresh environment", Some(step_body))});
        paths["/state"] = json!({"get": op("State of a fresh environment", None)});
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "quester environment server (OpenEnv protocol)", "version": API_VERSION},
        "paths": paths,
    })
}
