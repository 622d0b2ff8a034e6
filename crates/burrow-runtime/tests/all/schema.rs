//! Every tool's schema is valid JSON Schema and agrees with its argument type: the same examples pass both or fail both.

use std::sync::Arc;

use burrow_runtime::model::ToolDefinition;
use burrow_runtime::tools::{
    DeletePathArgs, EditFileArgs, ExecuteArgs, GlobArgs, GrepArgs, LsArgs, ReadFileArgs,
    WriteFileArgs,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::support::{Mode, Wrapped, state_with, toolset};

async fn all_specs() -> Vec<ToolDefinition> {
    let sandbox = Wrapped::new(state_with(&[]).await, Mode::Plain, true);
    toolset(Arc::new(sandbox)).definitions()
}

fn schema(specs: &[ToolDefinition], name: &str) -> Value {
    specs
        .iter()
        .find(|s| s.name == name)
        .unwrap()
        .input_schema
        .clone()
}

#[tokio::test]
async fn every_schema_is_valid_json_schema_for_an_object() {
    let specs = all_specs().await;
    assert_eq!(
        specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        [
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "delete_path",
            "glob",
            "grep",
            "execute"
        ]
    );
    for spec in &specs {
        let schema = &spec.input_schema;
        if let Err(e) = jsonschema::meta::validate(schema) {
            panic!("{}: not valid JSON Schema: {e}\n{schema:#}", spec.name);
        }
        assert_eq!(schema["type"], "object", "{}", spec.name);
        assert_eq!(schema["additionalProperties"], false, "{}", spec.name);
        assert!(
            schema["$schema"].as_str().unwrap().contains("2020-12"),
            "{}",
            spec.name
        );
        assert!(
            spec.description.len() > 80,
            "{}: describe it for a model",
            spec.name
        );
        for (prop, sub) in schema["properties"].as_object().unwrap() {
            assert!(
                sub.get("description")
                    .is_some_and(|d| d.as_str().is_some_and(|d| !d.is_empty()))
                    || sub.get("$ref").is_some(),
                "{}.{prop} has no description",
                spec.name
            );
        }
    }
}

/// `args` validates against `schema` exactly when it deserializes into `T`.
fn agree<T: DeserializeOwned + std::fmt::Debug>(
    tool: &str,
    schema: &Value,
    args: Value,
    valid: bool,
) {
    let validator = jsonschema::validator_for(schema).unwrap();
    let by_schema = validator.is_valid(&args);
    let by_type = serde_json::from_value::<T>(args.clone());
    assert_eq!(
        by_schema, valid,
        "{tool}: schema says {by_schema} for {args}"
    );
    assert_eq!(
        by_type.is_ok(),
        valid,
        "{tool}: the type says {by_type:?} for {args}"
    );
}

#[tokio::test]
async fn examples_pass_both_schema_and_type_or_fail_both() {
    let specs = all_specs().await;
    let s = |name| schema(&specs, name);

    for (args, valid) in [
        (json!({}), true),
        (json!({"path": "/src"}), true),
        (json!({"path": 3}), false),
        (json!({"dir": "/"}), false),
        (json!("/"), false),
    ] {
        agree::<LsArgs>("ls", &s("ls"), args, valid);
    }
    for (args, valid) in [
        (json!({"file_path": "/a"}), true),
        (json!({"file_path": "/a", "offset": 10, "limit": 5}), true),
        (json!({}), false),
        (json!({"file_path": "/a", "offset": "10"}), false),
        (json!({"file_path": "/a", "offset": -1}), false),
        (json!({"file_path": "/a", "offset": 1.5}), false),
        (json!({"file_path": ["/a"]}), false),
        (json!({"file_path": "/a", "lines": 3}), false),
    ] {
        agree::<ReadFileArgs>("read_file", &s("read_file"), args, valid);
    }
    for (args, valid) in [
        (json!({"file_path": "/a", "content": ""}), true),
        (json!({"file_path": "/a"}), false),
        (json!({"file_path": "/a", "content": null}), false),
        (json!({"file_path": "/a", "content": 42}), false),
    ] {
        agree::<WriteFileArgs>("write_file", &s("write_file"), args, valid);
    }
    for (args, valid) in [
        (
            json!({"file_path": "/a", "old_string": "x", "new_string": "y"}),
            true,
        ),
        (
            json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true}),
            true,
        ),
        (json!({"file_path": "/a", "old_string": "x"}), false),
        (
            json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": "yes"}),
            false,
        ),
    ] {
        agree::<EditFileArgs>("edit_file", &s("edit_file"), args, valid);
    }
    for (args, valid) in [
        (json!({"pattern": "*.rs"}), true),
        (json!({"pattern": "*.rs", "path": "/src"}), true),
        (json!({"path": "/src"}), false),
        (json!({"pattern": ["*.rs"]}), false),
    ] {
        agree::<GlobArgs>("glob", &s("glob"), args, valid);
    }
    for (args, valid) in [
        (json!({"pattern": "fn"}), true),
        (
            json!({"pattern": "fn", "path": "/", "glob": "*.rs", "output_mode": "content", "ignore_case": true, "fixed_strings": false}),
            true,
        ),
        (json!({"pattern": "fn", "output_mode": "count"}), true),
        (
            json!({"pattern": "fn", "output_mode": "files_with_matches"}),
            true,
        ),
        (json!({"pattern": "fn", "output_mode": "lines"}), false),
        (json!({"pattern": "fn", "ignore_case": 1}), false),
        (json!({"pattern": "fn", "include": "*.rs"}), false),
        (json!({}), false),
    ] {
        agree::<GrepArgs>("grep", &s("grep"), args, valid);
    }
    for (args, valid) in [
        (json!({"command": "ls"}), true),
        (json!({"command": "ls", "timeout": 30}), true),
        (json!({"command": "ls", "timeout": "30"}), false),
        (json!({"command": "ls", "timeout": -3}), false),
        (json!({"cmd": "ls"}), false),
    ] {
        agree::<ExecuteArgs>("execute", &s("execute"), args, valid);
    }
    for (args, valid) in [
        (json!({"path": "/d"}), true),
        (json!({"path": "/d", "recursive": true}), true),
        (json!({"path": "/d", "recursive": "yes"}), false),
        (json!({"file_path": "/d"}), false),
        (json!({}), false),
    ] {
        agree::<DeletePathArgs>("delete_path", &s("delete_path"), args, valid);
    }
}

#[tokio::test]
async fn defaults_in_the_schema_are_the_types_defaults() {
    let specs = all_specs().await;
    let read = schema(&specs, "read_file");
    assert_eq!(read["properties"]["limit"]["default"], 2000);
    let parsed: ReadFileArgs = serde_json::from_value(json!({"file_path": "/a"})).unwrap();
    // No limit: the toolset's `ToolConfig::read_limit` applies (2000 by default).
    assert_eq!((parsed.offset, parsed.limit), (0, None));
    let grep: GrepArgs = serde_json::from_value(json!({"pattern": "x"})).unwrap();
    assert_eq!(grep.path, "/");
    assert_eq!(schema(&specs, "grep")["properties"]["path"]["default"], "/");
}

#[tokio::test]
async fn execute_is_offered_only_on_a_sandbox() {
    let plain = toolset(Arc::new(state_with(&[]).await));
    let names: Vec<String> = plain.definitions().into_iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "delete_path",
            "glob",
            "grep"
        ]
    );
    let specs = all_specs().await;
    assert!(specs.iter().any(|s| s.name == "execute"));
}
