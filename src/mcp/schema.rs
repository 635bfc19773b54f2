//! Input schemas cleaned for providers that reject parts of JSON Schema.

use serde_json::{Map, Value};

/// JSON Schema keywords removed from input schemas: metadata no model needs, and `format`,
/// which some OpenAI-compatible backends and Gemini reject for values they do not know.
const DROPPED_KEYWORDS: [&str; 6] = ["$schema", "$id", "$comment", "format", "examples", "default"];

/// Remove [`DROPPED_KEYWORDS`] from a schema and every schema inside it (properties, items,
/// combinators, definitions), never from a `properties` map itself, where a property may well
/// be called `format`. The top level is made an object schema with `properties`, which
/// function-calling APIs require.
pub(crate) fn sanitize_schema(schema: &mut Value) {
    clean(schema);
    if let Value::Object(map) = schema {
        map.insert("type".into(), Value::String("object".into()));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

fn clean(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    for keyword in DROPPED_KEYWORDS {
        map.remove(keyword);
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(clean);
        }
    }
    for key in ["items", "additionalProperties", "not", "contains"] {
        if let Some(child) = map.get_mut(key) {
            clean(child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(clean);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_lose_what_providers_reject_and_keep_properties_named_like_keywords() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "format": {"type": "string", "format": "date-time", "default": "x"},
                "list": {"type": "array", "items": {"type": "string", "format": "uri"}},
                "either": {"anyOf": [{"type": "string", "format": "email"}, {"type": "null"}]}
            },
            "required": ["format"]
        });
        sanitize_schema(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "format": {"type": "string"},
                    "list": {"type": "array", "items": {"type": "string"}},
                    "either": {"anyOf": [{"type": "string"}, {"type": "null"}]}
                },
                "required": ["format"]
            })
        );
        let mut empty = json!({});
        sanitize_schema(&mut empty);
        assert_eq!(empty, json!({"type": "object", "properties": {}}));
    }
}
