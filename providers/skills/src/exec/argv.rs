//! From the model's JSON arguments to the argument vector, in the order the descriptor
//! declares, refusing anything the descriptor does not allow before a process exists.

use serde_json::Value;

use super::guard::{self, PathPolicy};
use crate::descriptor::{ParamKind, ParamSpec, ParamType, ToolSpec};

/// The arguments after the program: fixed `args`, then each parameter present. The error is
/// one sentence naming the argument at fault.
pub(crate) fn build_argv(spec: &ToolSpec, args: &Value, paths: &PathPolicy) -> Result<Vec<String>, String> {
    let empty = serde_json::Map::new();
    let given = match args {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => return Err(format!("arguments must be a JSON object, got {other}")),
    };
    if let Some(unknown) = given
        .keys()
        .find(|k| !spec.params().iter().any(|p| &p.name == *k))
    {
        let known: Vec<&str> = spec.params().iter().map(|p| p.name.as_str()).collect();
        return Err(if known.is_empty() {
            format!("unknown argument `{unknown}`; this tool takes no arguments")
        } else {
            format!(
                "unknown argument `{unknown}`; this tool takes {}",
                known.join(", ")
            )
        });
    }
    let mut argv = spec.args().to_vec();
    for p in spec.params() {
        let value = match given.get(&p.name) {
            None | Some(Value::Null) if p.required => {
                return Err(format!("missing required argument `{}`", p.name))
            }
            None | Some(Value::Null) => continue,
            Some(v) => v,
        };
        push_param(&mut argv, p, value, paths).map_err(|reason| format!("argument `{}` {reason}", p.name))?;
    }
    Ok(argv)
}

fn push_param(
    argv: &mut Vec<String>,
    p: &ParamSpec,
    value: &Value,
    paths: &PathPolicy,
) -> Result<(), String> {
    let text = render(p.ty, value)?;
    if text.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    let flag = p.flag.clone().unwrap_or_default();
    match p.kind {
        ParamKind::Positional => {
            guard::positional(&text)?;
            if p.path {
                paths.check(&text)?;
            }
            argv.push(text);
        }
        ParamKind::Flag => {
            if p.path {
                paths.check(&text)?;
            }
            argv.push(flag);
            argv.push(text);
        }
        ParamKind::FlagIfBoolean => {
            if value == &Value::Bool(true) {
                argv.push(flag);
            }
        }
    }
    Ok(())
}

/// The value as one argument, if it has the declared type.
fn render(ty: ParamType, value: &Value) -> Result<String, String> {
    let ok = match (ty, value) {
        (ParamType::String, Value::String(s)) => return Ok(s.clone()),
        (ParamType::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
        (ParamType::Number, Value::Number(_)) | (ParamType::Boolean, Value::Bool(_)) => true,
        _ => false,
    };
    if ok {
        Ok(value.to_string())
    } else {
        Err(format!("must be a {}, got {value}", ty.as_str()))
    }
}
