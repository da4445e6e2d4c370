//! What a language's runtime prints of an error nothing caught, read back from a guest's
//! stderr: a Python traceback (componentize-py's runtime prints it, then panics), a Go
//! panic (Go's runtime prints it, then traps). Each becomes one line that names the error
//! and where in the author's code it was raised, `KeyError: 'image' (at app.py:21 in
//! size_of)`: the first line of the call's error, so of the Event (all that `kubectl get
//! events` shows of it), with the whole trace after it for the log.

/// The summary line of the last Python traceback in `stderr`: its last line (the
/// exception) and the innermost frame of the plugin's own code: in its module's directory
/// (`/0/`, the first entry of the path the SDK's build gives componentize-py), else in
/// neither the SDK (`kubewasm/`) nor the standard library (`/python/`), else the innermost.
pub(crate) fn python(stderr: &str) -> Option<String> {
    let traceback = &stderr[stderr.rfind("Traceback (most recent call last):")?..];
    let exception = traceback.lines().rev().find(|l| !l.trim().is_empty() && !l.starts_with(' '))?.trim();
    if exception.starts_with("Traceback") {
        return None;
    }
    let frames: Vec<(&str, &str, &str)> = traceback.lines().filter_map(python_frame).collect();
    let in_module_dir = |(file, ..): &&(&str, &str, &str)| file.starts_with("/0/");
    let not_sdk_or_stdlib = |(file, ..): &&(&str, &str, &str)| {
        !file.contains("/kubewasm/") && !file.starts_with("/python/") && !file.contains("/lib/python")
    };
    let own = frames.iter().rev().find(in_module_dir).or_else(|| frames.iter().rev().find(not_sdk_or_stdlib));
    let located = match own.or(frames.last()) {
        Some((file, line, function)) => format!(" (at {}:{line} in {function})", short(file)),
        None => String::new(),
    };
    Some(format!("{exception}{located}"))
}

/// `File "/0/app.py", line 21, in size_of`: the file, the line and the function.
fn python_frame(line: &str) -> Option<(&str, &str, &str)> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (number, function) = rest.split_once(", in ")?;
    Some((file, number, function.trim_end()))
}

/// The summary line of a Go panic in `stderr`: its `panic: ` line and the first frame of
/// the panicking goroutine in the plugin's own code, neither the SDK's nor the standard
/// library's (the runtime's among them).
pub(crate) fn go(stderr: &str) -> Option<String> {
    let start = stderr.lines().position(|l| l.starts_with("panic: "))?;
    let lines: Vec<&str> = stderr.lines().skip(start).collect();
    let panic = lines[0].trim_end();
    let goroutine = lines.iter().position(|l| l.starts_with("goroutine ") && l.trim_end().ends_with(':'))?;
    // After the goroutine's header, a function line, then its `\tfile:line +0x..` line.
    let frames = lines[goroutine + 1..].chunks(2).map_while(|pair| match pair {
        [function, at] if at.starts_with('\t') => Some((*function, at.trim())),
        _ => None,
    });
    let own = |(function, _): &(&str, &str)| !function.starts_with("kubewasm.dev/sdk") && !go_standard(function);
    let located = frames.filter(own).find_map(|(function, at)| {
        let at = at.split(" +0x").next()?;
        let (file, line) = at.rsplit_once(':')?;
        let name = function.rfind('(').map_or(function, |paren| &function[..paren]);
        Some(format!(" (at {}:{line} in {name})", short(file)))
    });
    Some(format!("{panic}{}", located.unwrap_or_default()))
}

/// Whether `function` (`encoding/json.(*decodeState).value`, `runtime.gopanic`, `panic(...)`)
/// is of Go's standard library or runtime: its package's import path starts with an
/// element without a dot, and it is not `main`.
fn go_standard(function: &str) -> bool {
    let name = function.rfind('/').map_or(0, |slash| slash + 1);
    let package = &function[..function[name..].find('.').map_or(function.len(), |dot| name + dot)];
    package != "main" && !package.split('/').next().unwrap_or_default().contains('.')
}

/// The file's name, without the directories a build or a runtime put before it.
fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_traceback_is_summed_up_by_its_exception_and_the_plugins_innermost_frame() {
        let stderr = concat!(
            "printed first\n",
            "Traceback (most recent call last):\n",
            "  File \"/1/kubewasm/export.py\", line 87, in reconcile\n",
            "  File \"/0/app.py\", line 17, in reconcile\n",
            "  File \"/0/app.py\", line 21, in size_of\n",
            "  File \"/python/json/decoder.py\", line 345, in decode\n",
            "KeyError: 'settings'\n",
        );
        assert_eq!(python(stderr).as_deref(), Some("KeyError: 'settings' (at app.py:21 in size_of)"));
        // A chained exception: the last traceback is the one that ended the call.
        let chained = format!(
            "{stderr}\nDuring handling of the above exception, another exception occurred:\n\n\
             Traceback (most recent call last):\n  File \"/0/app.py\", line 30, in reconcile\nValueError: no size\n"
        );
        assert_eq!(python(&chained).as_deref(), Some("ValueError: no size (at app.py:30 in reconcile)"));
        // Raised in the SDK alone: its frame, as there is no other.
        let sdk = "Traceback (most recent call last):\n  File \"/1/kubewasm/export.py\", line 9, in f\nTypeError: x\n";
        assert_eq!(python(sdk).as_deref(), Some("TypeError: x (at export.py:9 in f)"));
        // Built otherwise than by the SDK: the innermost frame of neither the SDK nor the
        // standard library.
        let elsewhere = "Traceback (most recent call last):\n  File \"/src/op.py\", line 4, in f\n  \
                         File \"/python/json/decoder.py\", line 3, in d\nValueError: x\n";
        assert_eq!(python(elsewhere).as_deref(), Some("ValueError: x (at op.py:4 in f)"));
        assert_eq!(python("no traceback here"), None);
        assert_eq!(python("Traceback (most recent call last):\n"), None, "cut short before the exception");
    }

    #[test]
    fn a_go_panic_is_summed_up_by_its_message_and_the_plugins_first_frame() {
        let stderr = concat!(
            "log line\n",
            "panic: boom [recovered]\n",
            "\n",
            "goroutine 1 [running]:\n",
            "panic({0x1, 0x2})\n",
            "\t/usr/lib/go/src/runtime/panic.go:785 +0x13\n",
            "main.count(...)\n",
            "\t/src/plugin/main.go:28\n",
            "main.Panics.Reconcile({}, 0x34c400)\n",
            "\t/src/plugin/main.go:22 +0x23\n",
            "kubewasm.dev/sdk.reconcile({{0x332100, 0x79}, ...})\n",
            "\t/sdk/export.go:167 +0x17\n",
        );
        assert_eq!(go(stderr).as_deref(), Some("panic: boom [recovered] (at main.go:28 in main.count)"));
        let in_a_library = concat!(
            "panic: x\n\ngoroutine 1 [running]:\n",
            "encoding/json.(*decodeState).value(0x1)\n\t/go/src/encoding/json/decode.go:3 +0x1\n",
            "example.com/op/internal/spec.Parse(...)\n\t/src/op/internal/spec/spec.go:9\n",
        );
        assert_eq!(go(in_a_library).as_deref(), Some("panic: x (at spec.go:9 in example.com/op/internal/spec.Parse)"));
        let in_the_sdk = "panic: x\n\ngoroutine 1 [running]:\nkubewasm.dev/sdk.f()\n\t/sdk/f.go:3 +0x1\n";
        assert_eq!(go(in_the_sdk).as_deref(), Some("panic: x"), "no frame of the plugin's own");
        assert_eq!(go("no panic"), None);
        assert_eq!(go("panic: cut short before its goroutine\n"), None);
    }
}
