//! Chat formatting with the model's own Jinja template (rendered by minijinja).

use crate::error::{ModelError, Result};
use serde::{Deserialize, Serialize};

/// One chat turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text of the turn.
    pub content: String,
}

impl ChatMessage {
    /// A message with the given role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// A chat template with the special tokens it may refer to.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    source: String,
    bos_token: String,
    eos_token: String,
    /// The `enable_thinking` the template sees. Off by default: the papers run Qwen3 with
    /// thinking off, and its template then opens the reply with an empty `<think>` block.
    thinking: bool,
}

/// ChatML, used when a model ships no template.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

impl ChatTemplate {
    /// A template from its Jinja source. Fails if it does not parse.
    pub fn new(source: impl Into<String>, bos_token: &str, eos_token: &str) -> Result<Self> {
        let t = ChatTemplate {
            source: source.into(),
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
            thinking: false,
        };
        t.environment()
            .template_from_str(&t.source)
            .map_err(template_error)?;
        Ok(t)
    }

    /// The Jinja source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The same template rendering with `enable_thinking` = `thinking` (default false).
    pub fn with_thinking(mut self, thinking: bool) -> Self {
        self.thinking = thinking;
        self
    }

    /// Sets `enable_thinking` on a template already in place (e.g. a loaded model's).
    pub fn set_thinking(&mut self, thinking: bool) {
        self.thinking = thinking;
    }

    /// The `enable_thinking` value the template is rendered with.
    pub fn thinking(&self) -> bool {
        self.thinking
    }

    fn environment(&self) -> minijinja::Environment<'_> {
        let mut env = minijinja::Environment::new();
        // Hugging Face templates use Python string methods (.strip(), .startswith(), ...).
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |msg: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    msg,
                ))
            },
        );
        env
    }

    /// Renders the conversation; with `add_generation_prompt` the text ends where the assistant's
    /// reply starts.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let env = self.environment();
        let tmpl = env
            .template_from_str(&self.source)
            .map_err(template_error)?;
        tmpl.render(minijinja::context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => &self.bos_token,
            eos_token => &self.eos_token,
            // Always defined, so templates testing `enable_thinking is defined` see a value.
            enable_thinking => self.thinking,
        })
        .map_err(template_error)
    }
}

fn template_error(e: minijinja::Error) -> ModelError {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    ModelError::Template(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_renders_turns_and_generation_prompt() {
        let t = ChatTemplate::new(CHATML_TEMPLATE, "", "<|im_end|>").unwrap();
        let s = t.render(&[ChatMessage::new("user", "Hi")], true).unwrap();
        assert_eq!(s, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    }

    #[test]
    fn python_string_methods_work() {
        let t = ChatTemplate::new(
            "{% for m in messages %}{{ m.content.strip().upper() }}{% if m.role.startswith('us') %}!{% endif %}{% endfor %}",
            "",
            "",
        )
        .unwrap();
        assert_eq!(
            t.render(&[ChatMessage::new("user", "  hi ")], false)
                .unwrap(),
            "HI!"
        );
    }

    #[test]
    fn raise_exception_is_an_error_not_a_panic() {
        let t = ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
        let e = t.render(&[], false).unwrap_err().to_string();
        assert!(e.contains("no system role"), "{e}");
    }

    /// The generation-prompt part of Qwen3's template, as it ships.
    const QWEN3_SNIPPET: &str = "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}";

    #[test]
    fn qwen3_thinking_is_off_unless_turned_on() {
        let msgs = [ChatMessage::new("user", "Hi")];
        let t = ChatTemplate::new(QWEN3_SNIPPET, "", "<|im_end|>").unwrap();
        assert!(!t.thinking());
        assert_eq!(
            t.render(&msgs, true).unwrap(),
            "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
        let on = t.clone().with_thinking(true);
        assert_eq!(on.render(&msgs, true).unwrap(), "<|im_start|>assistant\n");
        let mut off = on;
        off.set_thinking(false);
        assert_eq!(
            off.render(&msgs, true).unwrap(),
            t.render(&msgs, true).unwrap()
        );
        // Templates that never mention it render as before.
        let chatml = ChatTemplate::new(CHATML_TEMPLATE, "", "<|im_end|>").unwrap();
        assert_eq!(
            chatml.render(&msgs, true).unwrap(),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn syntax_error_is_reported() {
        assert!(ChatTemplate::new("{% for %}", "", "").is_err());
    }
}
