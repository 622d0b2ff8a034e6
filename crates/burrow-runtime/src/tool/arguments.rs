//! A tool's arguments: the JSON Schema of a typed argument struct, and the refusal a call whose arguments are not a JSON object gets.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The refusal a call whose arguments are not a JSON object gets, or the
/// arguments (`null` counts as `{}`).
pub fn object_arguments(tool: &str, args: Value) -> std::result::Result<Value, String> {
    match args {
        Value::Null => Ok(Value::Object(serde_json::Map::new())),
        Value::Object(_) => Ok(args),
        other => Err(format!(
            "The arguments for {tool} must be a JSON object of named arguments, not {}; check the tool's input schema and call it again.",
            json_kind(&other)
        )),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON Schema of `T`'s arguments (draft 2020-12, deserialize contract).
pub fn schema_of<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}
