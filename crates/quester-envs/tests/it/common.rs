//! Helpers shared by the test modules.

/// `action` inside an action tag.
pub fn wrap(action: &str) -> String {
    format!("<action>{action}</action>")
}

/// A TOML table from its text.
pub fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}
