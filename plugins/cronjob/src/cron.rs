//! Cron schedules exactly as the Kubebuilder tutorial reads them: a port of
//! `github.com/robfig/cron` v1.2.0's `ParseStandard` and `Schedule.Next`, with its error
//! messages word for word, so a refused schedule reads as the tutorial's webhook words it
//! (`Expected exactly 5 fields, found 1: invalid-cron-schedule`). Times are UTC.
//!
//! What it accepts: five whitespace-separated fields (minute 0-59, hour 0-23, day of month
//! 1-31, month 1-12 or `jan`-`dec`, day of week 0-6 or `sun`-`sat`, names in any case),
//! each a comma list of `*`, `?` (the same as `*`, in any field), `N`, `N-M`, with an
//! optional `/step` (`N/step` meaning `N-max/step`); or a descriptor: `@yearly`,
//! `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`, `@every <Go
//! duration>`. When the day-of-month or the day-of-week field starts with `*` or `?`, a
//! day must match both; otherwise either (as Vixie cron).

use std::time::Duration;

use kubewasm_sdk::k8s_openapi::jiff::civil::{Date, DateTime};
use kubewasm_sdk::k8s_openapi::jiff::tz::TimeZone;
use kubewasm_sdk::k8s_openapi::jiff::{Span, Timestamp, ToSpan};

/// Set on a field written `*` or `?`: what switches day matching to "both".
const STAR: u64 = 1 << 63;

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// When a schedule runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Five fields (or a descriptor other than `@every`): one bit per allowed value.
    Spec { minute: u64, hour: u64, dom: u64, month: u64, dow: u64 },
    /// `@every <duration>`: that long after each run, at least a second, whole seconds.
    Every(Duration),
}

/// Parses `spec` as robfig/cron v1.2.0's `ParseStandard` does.
///
/// # Errors
///
/// robfig/cron's own message for what is wrong.
pub fn parse(spec: &str) -> Result<Schedule, String> {
    if spec.is_empty() {
        return Err("Empty spec string".into());
    }
    if spec.starts_with('@') {
        return descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("Expected exactly 5 fields, found {}: {spec}", fields.len()));
    }
    Ok(Schedule::Spec {
        minute: field(fields[0], &MINUTES)?,
        hour: field(fields[1], &HOURS)?,
        dom: field(fields[2], &DOM)?,
        month: field(fields[3], &MONTHS)?,
        dow: field(fields[4], &DOW)?,
    })
}

fn all(bounds: &Bounds) -> u64 {
    bits(bounds.min, bounds.max, 1) | STAR
}

fn descriptor(spec: &str) -> Result<Schedule, String> {
    let at =
        |minute: u64, hour: u64, dom: u64, month: u64, dow: u64| Ok(Schedule::Spec { minute, hour, dom, month, dow });
    let first = |bounds: &Bounds| 1u64 << bounds.min;
    match spec {
        "@yearly" | "@annually" => at(first(&MINUTES), first(&HOURS), first(&DOM), first(&MONTHS), all(&DOW)),
        "@monthly" => at(first(&MINUTES), first(&HOURS), first(&DOM), all(&MONTHS), all(&DOW)),
        "@weekly" => at(first(&MINUTES), first(&HOURS), all(&DOM), all(&MONTHS), first(&DOW)),
        "@daily" | "@midnight" => at(first(&MINUTES), first(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => at(first(&MINUTES), all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        _ => match spec.strip_prefix("@every ") {
            Some(text) => {
                let nanos = go_duration(text).map_err(|e| format!("Failed to parse duration {spec}: {e}"))?;
                // Every(): at least a second, rounded down to whole seconds.
                let seconds = u64::try_from(nanos / 1_000_000_000).unwrap_or(0).max(1);
                Ok(Schedule::Every(Duration::from_secs(seconds)))
            }
            None => Err(format!("Unrecognized descriptor: {spec}")),
        },
    }
}

/// Go's `time.ParseDuration`, in nanoseconds (its error text too).
fn go_duration(text: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration {text:?}")),
            other => return Err(format!("time: unknown unit {other:?} in duration {text:?}")),
        };
        total += number.parse::<f64>().map_err(|_| invalid())? * scale;
    }
    if total > 9.223_372_036_854_776e18 {
        return Err(invalid());
    }
    #[allow(clippy::cast_possible_truncation)] // bounded just above
    let nanos = total as i128;
    Ok(if negative { -nanos } else { nanos })
}

fn field(text: &str, bounds: &Bounds) -> Result<u64, String> {
    // strings.FieldsFunc: empty items between commas are skipped.
    text.split(',').filter(|r| !r.is_empty()).try_fold(0, |acc, expr| Ok(acc | range(expr, bounds)?))
}

fn range(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, extra) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max, STAR)
    } else {
        let start = int_or_name(low_and_high[0], bounds)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], bounds)?,
            _ => return Err(format!("Too many hyphens: {expr}")),
        };
        (start, end, 0)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = int(range_and_step[1])?;
            if single {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("Too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!("Beginning of range ({start}) below minimum ({}): {expr}", bounds.min));
    }
    if end > bounds.max {
        return Err(format!("End of range ({end}) above maximum ({}): {expr}", bounds.max));
    }
    if start > end {
        return Err(format!("Beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("Step of range should be a positive number: {expr}"));
    }
    Ok(bits(start, end, step) | extra)
}

fn bits(start: u32, end: u32, step: u32) -> u64 {
    (start..=end).step_by(step as usize).fold(0, |acc, n| acc | (1 << n))
}

fn int_or_name(expr: &str, bounds: &Bounds) -> Result<u32, String> {
    let lower = expr.to_ascii_lowercase();
    match bounds.names.iter().find(|(name, _)| *name == lower) {
        Some((_, value)) => Ok(*value),
        None => int(expr),
    }
}

/// robfig's `mustParseInt`: Go's `strconv.Atoi`, then no negatives.
fn int(expr: &str) -> Result<u32, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("Failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"));
    }
    let Ok(number) = expr.parse::<i64>() else {
        return Err(format!("Failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"));
    };
    if number < 0 {
        return Err(format!("Negative number ({number}) not allowed: {expr}"));
    }
    // Above any field's maximum, so the range check words it.
    Ok(u32::try_from(number).unwrap_or(u32::MAX))
}

impl Schedule {
    /// The first run strictly after `after`, or `None` when there is none within five
    /// years (a schedule such as `0 0 30 2 *`).
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            Self::Every(every) => {
                let seconds = i64::try_from(every.as_secs()).ok()?;
                after
                    .checked_add(seconds.seconds())
                    .ok()?
                    .checked_sub(i64::from(after.subsec_nanosecond()).nanoseconds())
                    .ok()
            }
            Self::Spec { minute, hour, dom, month, dow } => next_spec([*minute, *hour, *dom, *month, *dow], after),
        }
    }
}

fn has(bits: u64, n: i8) -> bool {
    bits & (1 << n) != 0
}

fn day_matches(dom: u64, dow: u64, t: DateTime) -> bool {
    let dom_match = has(dom, t.day());
    let dow_match = has(dow, t.weekday().to_sunday_zero_offset());
    if dom & STAR != 0 || dow & STAR != 0 { dom_match && dow_match } else { dom_match || dow_match }
}

/// One step of `SpecSchedule.Next`: whether a time matches the field, the time truncated
/// to the start of its unit, the unit, and whether stepping one unit wrapped the field
/// above it (back to the first month, day, hour, minute).
struct Stage {
    matches: fn(&[u64; 5], DateTime) -> bool,
    truncate: fn(DateTime) -> Option<DateTime>,
    unit: fn() -> Span,
    wrapped: fn(DateTime) -> bool,
}

const STAGES: [Stage; 5] = [
    Stage {
        matches: |s, t| has(s[3], t.month()),
        truncate: |t| Date::new(t.year(), t.month(), 1).ok().map(|d| d.at(0, 0, 0, 0)),
        unit: || 1.month(),
        wrapped: |t| t.month() == 1,
    },
    Stage {
        matches: |s, t| day_matches(s[2], s[4], t),
        truncate: |t| Some(t.date().at(0, 0, 0, 0)),
        unit: || 1.day(),
        wrapped: |t| t.day() == 1,
    },
    Stage {
        matches: |s, t| has(s[1], t.hour()),
        truncate: |t| Some(t.date().at(t.hour(), 0, 0, 0)),
        unit: || 1.hour(),
        wrapped: |t| t.hour() == 0,
    },
    Stage {
        matches: |s, t| has(s[0], t.minute()),
        truncate: |t| Some(t.date().at(t.hour(), t.minute(), 0, 0)),
        unit: || 1.minute(),
        wrapped: |t| t.minute() == 0,
    },
    // The seconds field is always "0".
    Stage {
        matches: |_, t| t.second() == 0,
        truncate: |t| Some(t.date().at(t.hour(), t.minute(), t.second(), 0)),
        unit: || 1.second(),
        wrapped: |t| t.second() == 0,
    },
];

/// `SpecSchedule.Next` of robfig/cron v1.2.0, in UTC: advance month, day, hour, minute in
/// turn until each matches (truncating the lower units at the first step), starting over
/// when one wraps; at most five years ahead.
fn next_spec(spec: [u64; 5], after: Timestamp) -> Option<Timestamp> {
    // The upcoming whole second.
    let start =
        after.checked_add(1.second()).ok()?.checked_sub(i64::from(after.subsec_nanosecond()).nanoseconds()).ok()?;
    let mut t = start.to_zoned(TimeZone::UTC).datetime();
    let year_limit = t.year() + 5;
    let mut added = false;
    'wrap: loop {
        if t.year() > year_limit {
            return None;
        }
        for stage in &STAGES {
            while !(stage.matches)(&spec, t) {
                if !added {
                    added = true;
                    t = (stage.truncate)(t)?;
                }
                t = t.checked_add((stage.unit)()).ok()?;
                if (stage.wrapped)(t) {
                    continue 'wrap;
                }
            }
        }
        return t.to_zoned(TimeZone::UTC).ok().map(|z| z.timestamp());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(spec: &str, after: &str) -> String {
        parse(spec).unwrap().next(after.parse().unwrap()).unwrap().to_string()
    }

    #[test]
    fn refusals_read_as_robfig_cron_words_them() {
        let cases = [
            ("", "Empty spec string"),
            ("invalid-cron-schedule", "Expected exactly 5 fields, found 1: invalid-cron-schedule"),
            ("* * * * * *", "Expected exactly 5 fields, found 6: * * * * * *"),
            ("* * * * 7", "End of range (7) above maximum (6): 7"),
            ("60 * * * *", "End of range (60) above maximum (59): 60"),
            ("* * 0 * *", "Beginning of range (0) below minimum (1): 0"),
            ("5-2 * * * *", "Beginning of range (5) beyond end of range (2): 5-2"),
            ("*/0 * * * *", "Step of range should be a positive number: */0"),
            ("1-2-3 * * * *", "Too many hyphens: 1-2-3"),
            ("1/2/3 * * * *", "Too many slashes: 1/2/3"),
            ("x * * * *", "Failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ("* * * foo *", "Failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax"),
            ("@reboot", "Unrecognized descriptor: @reboot"),
            ("@every x", "Failed to parse duration @every x: time: invalid duration \"x\""),
        ];
        for (spec, message) in cases {
            assert_eq!(parse(spec).unwrap_err(), message, "{spec:?}");
        }
    }

    #[test]
    fn what_robfig_cron_accepts_is_accepted() {
        for spec in [
            "*/5 * * * *",
            "0 0 * * ?",
            "? ? ? ? ?",
            "0 9 * JAN-mar MON-fri",
            "5/15 1,2,,3 1-31 * 0-6",
            "@midnight",
            "@every 1h30m",
            "@annually",
            "  0  0 * * *  ",
        ] {
            assert!(parse(spec).is_ok(), "{spec:?}: {:?}", parse(spec));
        }
    }

    #[test]
    fn runs_come_when_robfig_cron_schedules_them() {
        assert_eq!(next("*/5 * * * *", "2026-01-01T00:00:00Z"), "2026-01-01T00:05:00Z");
        assert_eq!(next("*/5 * * * *", "2026-01-01T00:03:59.5Z"), "2026-01-01T00:05:00Z");
        assert_eq!(next("0 9 * * mon", "2026-01-01T00:00:00Z"), "2026-01-05T09:00:00Z");
        assert_eq!(next("@yearly", "2026-03-01T00:00:00Z"), "2027-01-01T00:00:00Z");
        assert_eq!(next("0 0 31 * *", "2026-02-01T00:00:00Z"), "2026-03-31T00:00:00Z");
        assert_eq!(next("@every 1h30m", "2026-01-01T00:00:00.25Z"), "2026-01-01T01:30:00Z");
        // Neither day field starts with `*`: either may match (the 13th, or a Friday).
        assert_eq!(next("0 0 13 * 5", "2026-01-01T00:00:00Z"), "2026-01-02T00:00:00Z");
        // `*/2` starts with `*`: both must match (an odd day that is a Friday).
        assert_eq!(next("0 0 */2 * 5", "2026-01-01T00:00:00Z"), "2026-01-09T00:00:00Z");
        assert_eq!(parse("0 0 30 2 *").unwrap().next("2026-01-01T00:00:00Z".parse().unwrap()), None);
    }
}
