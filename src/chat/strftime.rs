//! `strftime_now(format)`, the clock global transformers gives templates (Llama 3 and others
//! print today's date into the system prompt with it).
//!
//! Python formats `datetime.now()` in the machine's local zone; this formats UTC, which is what
//! the servers and CI machines we render on use. Only the C-locale directives templates use are
//! supported; anything else is an error rather than a silently different prompt.

use std::time::{SystemTime, UNIX_EPOCH};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Formats the current UTC time.
pub fn strftime_now(format: &str) -> Result<String, String> {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs() as i64;
    strftime(secs, format)
}

/// Formats `secs` since the Unix epoch (UTC) with Python `strftime` directives.
pub fn strftime(secs: i64, format: &str) -> Result<String, String> {
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (tod / 3600, tod % 3600 / 60, tod % 60);
    // 1970-01-01 was a Thursday (index 3 with Monday = 0).
    let weekday = (days + 3).rem_euclid(7) as usize;
    let yday = days - days_from_civil(year, 1, 1) + 1;
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let d = chars
            .next()
            .ok_or_else(|| "strftime format ends with a lone '%'".to_string())?;
        let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
        let piece = match d {
            'Y' => year.to_string(),
            'y' => format!("{:02}", year.rem_euclid(100)),
            'm' => format!("{month:02}"),
            'd' => format!("{day:02}"),
            'H' => format!("{hour:02}"),
            'I' => format!("{hour12:02}"),
            'M' => format!("{minute:02}"),
            'S' => format!("{second:02}"),
            'p' => if hour < 12 { "AM" } else { "PM" }.to_string(),
            'j' => format!("{yday:03}"),
            'B' => MONTHS[month as usize - 1].to_string(),
            'b' => MONTHS[month as usize - 1][..3].to_string(),
            'A' => WEEKDAYS[weekday].to_string(),
            'a' => WEEKDAYS[weekday][..3].to_string(),
            'u' => (weekday + 1).to_string(),
            'w' => ((weekday + 1) % 7).to_string(),
            'F' => format!("{year}-{month:02}-{day:02}"),
            'T' => format!("{hour:02}:{minute:02}:{second:02}"),
            '%' => "%".to_string(),
            other => return Err(format!("strftime directive %{other} is not supported")),
        };
        out.push_str(&piece);
    }
    Ok(out)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_python() {
        // 2024-02-29 13:05:09 UTC, a Thursday; Python: datetime(2024,2,29,13,5,9).strftime(...)
        let t = 1_709_211_909;
        assert_eq!(strftime(t, "%d %b %Y").unwrap(), "29 Feb 2024");
        assert_eq!(
            strftime(t, "%A %B %j %I:%M:%S %p %y %%").unwrap(),
            "Thursday February 060 01:05:09 PM 24 %"
        );
        assert_eq!(strftime(0, "%F %T %a").unwrap(), "1970-01-01 00:00:00 Thu");
        assert!(strftime(t, "%Q").is_err());
        assert!(strftime_now("%Y").unwrap().len() == 4);
    }
}
