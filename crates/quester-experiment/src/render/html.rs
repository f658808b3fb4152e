//! report.html: one self-contained page (the tables of results.md, the plots as `data:` URLs,
//! the summary as inline JSON); it loads nothing from the network.

use base64::Engine;

use quester_report::render::{escape, script_json};

use crate::aggregate::Summary;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;\
padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0;font-size:14px}\
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}\
img{max-width:100%;border:1px solid #eee;margin:.5em 0}code{background:#f5f5f5;padding:0 3px}";

/// Inline markdown of our own tables: `**bold**` and `` `code` `` (already escaped text).
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut bold = false;
    let mut code = false;
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("**") {
            out.push_str(if bold { "</b>" } else { "<b>" });
            bold = !bold;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('`') {
            out.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
            rest = r;
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The subset of markdown `results.md` uses (headings, paragraphs, tables, bullets) as HTML.
fn markdown_to_html(md: &str) -> String {
    let mut out = String::new();
    let mut in_table = false;
    let mut header_row = false;
    let mut in_list = false;
    for line in md.lines() {
        let is_row = line.starts_with('|');
        if in_table && !is_row {
            out.push_str("</table>\n");
            in_table = false;
        }
        if in_list && !line.starts_with("- ") {
            out.push_str("</ul>\n");
            in_list = false;
        }
        if is_row {
            if !in_table {
                out.push_str("<table>\n");
                in_table = true;
                header_row = true;
            }
            let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
            if cells.iter().all(|c| c.trim().chars().all(|ch| ch == '-')) {
                continue;
            }
            let tag = if header_row { "th" } else { "td" };
            header_row = false;
            out.push_str("<tr>");
            for c in cells {
                out.push_str(&format!("<{tag}>{}</{tag}>", inline(&escape(c.trim()))));
            }
            out.push_str("</tr>\n");
        } else if let Some(h) = line.strip_prefix("## ") {
            out.push_str(&format!("<h2>{}</h2>\n", inline(&escape(h))));
        } else if let Some(h) = line.strip_prefix("# ") {
            out.push_str(&format!("<h1>{}</h1>\n", inline(&escape(h))));
        } else if let Some(item) = line.strip_prefix("- ") {
            if !in_list {
                out.push_str("<ul>\n");
                in_list = true;
            }
            out.push_str(&format!("<li>{}</li>\n", inline(&escape(item))));
        } else if !line.trim().is_empty() {
            out.push_str(&format!("<p>{}</p>\n", inline(&escape(line))));
        }
    }
    if in_table {
        out.push_str("</table>\n");
    }
    if in_list {
        out.push_str("</ul>\n");
    }
    out
}

/// The page.
pub fn page(summary: &Summary, pngs: &[(String, Vec<u8>)]) -> String {
    let mut body = markdown_to_html(&super::markdown(summary));
    body.push_str("<h2>Plots</h2>\n");
    for (name, bytes) in pngs {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        body.push_str(&format!(
            "<img alt=\"{}\" src=\"data:image/png;base64,{data}\">\n",
            escape(name)
        ));
    }
    let json = serde_json::to_string(summary).unwrap_or_else(|_| "null".into());
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style></head><body>\n{body}\
         <script type=\"application/json\" id=\"summary\">{}</script>\n</body></html>\n",
        escape(&summary.name),
        script_json(&json)
    )
}
