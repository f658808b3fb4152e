//! Parsing a turn's moves: `<action>up, right, down</action>`.

use super::grid::Dir;
use crate::action::extract_action;

/// The moves of one response, in order. Each comma-separated item must name exactly one
/// direction (case-insensitive keyword, other words allowed: `Move Up`); blank items are skipped.
/// Any item without a direction (or with two different ones) makes the whole action invalid;
/// the error says why.
pub fn parse_moves(response: &str) -> Result<Vec<Dir>, String> {
    let Some(body) = extract_action(response) else {
        return Err("no <action>...</action> found".into());
    };
    let mut moves = Vec::new();
    for item in body.split(',') {
        if item.trim().is_empty() {
            continue;
        }
        let mut found: Option<Dir> = None;
        for word in item.split(|c: char| !c.is_alphabetic()) {
            let Some(dir) = Dir::ALL
                .into_iter()
                .find(|d| word.eq_ignore_ascii_case(d.name()))
            else {
                continue;
            };
            if found.is_some_and(|f| f != dir) {
                return Err(format!("`{}` names two directions", item.trim()));
            }
            found = Some(dir);
        }
        match found {
            Some(dir) => moves.push(dir),
            None => return Err(format!("`{}` is not up, down, left or right", item.trim())),
        }
    }
    if moves.is_empty() {
        return Err("the action names no move".into());
    }
    Ok(moves)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_keywords() {
        assert_eq!(
            parse_moves("think <action>up, Right ,DOWN</action>"),
            Ok(vec![Dir::Up, Dir::Right, Dir::Down])
        );
        assert_eq!(
            parse_moves("<action>move left.</action>"),
            Ok(vec![Dir::Left])
        );
        assert_eq!(
            parse_moves("<action>up,,down,</action>"),
            Ok(vec![Dir::Up, Dir::Down])
        );
    }

    #[test]
    fn rejects_bad_items() {
        assert!(parse_moves("up").is_err());
        assert!(parse_moves("<action></action>").is_err());
        assert!(parse_moves("<action>up, jump</action>").is_err());
        assert!(parse_moves("<action>up or down</action>").is_err());
        assert!(parse_moves("<action>upward</action>").is_err());
    }
}
