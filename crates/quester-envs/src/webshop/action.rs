//! WebShop's action grammar: `search[keywords]` or `click[target]`.

/// A parsed WebShop action. Arguments are trimmed and lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShopAction {
    Search(String),
    Click(String),
}

/// Parses the text of one action (already taken out of `<action>...</action>`). The verb is
/// case-insensitive; the argument runs from the first `[` to the last `]`, and nothing but
/// whitespace may follow. `None` for anything else, including an empty argument.
pub fn parse_shop_action(text: &str) -> Option<ShopAction> {
    let text = text.trim();
    let open = text.find('[')?;
    let close = text.rfind(']')?;
    if close < open || !text[close + 1..].trim().is_empty() {
        return None;
    }
    let verb = text[..open].trim().to_lowercase();
    let arg = text[open + 1..close].trim().to_lowercase();
    if arg.is_empty() {
        return None;
    }
    match verb.as_str() {
        "search" => Some(ShopAction::Search(arg)),
        "click" => Some(ShopAction::Click(arg)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        assert_eq!(
            parse_shop_action(" Search[ Red Shoes ] "),
            Some(ShopAction::Search("red shoes".into()))
        );
        assert_eq!(
            parse_shop_action("click[< Prev]"),
            Some(ShopAction::Click("< prev".into()))
        );
        assert_eq!(
            parse_shop_action("click[28\" x 28\" [big]]"),
            Some(ShopAction::Click("28\" x 28\" [big]".into()))
        );
        assert_eq!(parse_shop_action("click[]"), None);
        assert_eq!(parse_shop_action("click[a] now"), None);
        assert_eq!(parse_shop_action("buy[a]"), None);
        assert_eq!(parse_shop_action("click]a["), None);
        assert_eq!(parse_shop_action("search"), None);
    }
}
