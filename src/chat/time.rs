//! `strftime_now(format)`: the date templates print ("Today Date: 26 Jul 2024"), read from the
//! clock, or from `SOURCE_DATE_EPOCH` (seconds, UTC) when that variable is set, so that a render
//! can be reproduced. The time is UTC (the library reads no time zone database), formatted with
//! the C library's directives as Python's `datetime.strftime` passes them on, glibc's `-` flag
//! (`%-d`) included.

use minijinja::{Error, ErrorKind};

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
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

/// A moment broken down into the fields strftime prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// The year.
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
    /// 0 to 59.
    pub second: u32,
    /// 0 (Sunday) to 6.
    pub weekday: u32,
    /// 1 to 366.
    pub yearday: u32,
}

/// Seconds since 1970 (UTC) as a civil date and time (Howard Hinnant's days-to-civil).
pub fn civil(secs: i64) -> Civil {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // Each of these is in range by construction (a day of the month, a month, ...).
    let small = |v: i64| u32::try_from(v).unwrap_or(0);
    let day = small(doy - (153 * mp + 2) / 5 + 1);
    let month = small(if mp < 10 { mp + 3 } else { mp - 9 });
    let year = yoe + era * 400 + i64::from(month <= 2);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    const BEFORE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let yearday = BEFORE[(month - 1) as usize] + day + u32::from(leap && month > 2);
    Civil {
        year,
        month,
        day,
        hour: small(rem / 3600),
        minute: small(rem % 3600 / 60),
        second: small(rem % 60),
        weekday: small((days + 4).rem_euclid(7)),
        yearday,
    }
}

/// The time `strftime_now` prints: `SOURCE_DATE_EPOCH` when set, else the clock.
fn now() -> Result<i64, Error> {
    if let Ok(text) = std::env::var("SOURCE_DATE_EPOCH") {
        return text.trim().parse::<i64>().map_err(|_| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "SOURCE_DATE_EPOCH must be a whole number of seconds, found {}",
                    crate::text::quote(text.as_bytes())
                ),
            )
        });
    }
    crate::platform::unix_time().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            "this platform has no clock for strftime_now (give date_string in the request)",
        )
    })
}

/// `strftime_now(format)`.
pub fn strftime_now(format: &str) -> Result<String, Error> {
    Ok(strftime(format, &civil(now()?)))
}

/// C's strftime (glibc's directives and `-` flag) for a UTC time.
pub fn strftime(format: &str, t: &Civil) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let unpadded = chars.peek() == Some(&'-');
        if unpadded {
            chars.next();
        }
        let num = |out: &mut String, v: i64, width: usize| {
            if unpadded {
                out.push_str(&v.to_string());
            } else {
                out.push_str(&format!("{v:0width$}"));
            }
        };
        let hour12 = if t.hour % 12 == 0 { 12 } else { t.hour % 12 };
        match chars.next() {
            Some('a') => out.push_str(&DAYS[t.weekday as usize][..3]),
            Some('A') => out.push_str(DAYS[t.weekday as usize]),
            Some('b') | Some('h') => out.push_str(&MONTHS[(t.month - 1) as usize][..3]),
            Some('B') => out.push_str(MONTHS[(t.month - 1) as usize]),
            Some('d') => num(&mut out, t.day.into(), 2),
            Some('e') => {
                if unpadded {
                    out.push_str(&t.day.to_string())
                } else {
                    out.push_str(&format!("{:2}", t.day))
                }
            }
            Some('H') => num(&mut out, t.hour.into(), 2),
            Some('I') => num(&mut out, hour12.into(), 2),
            Some('j') => num(&mut out, t.yearday.into(), 3),
            Some('m') => num(&mut out, t.month.into(), 2),
            Some('M') => num(&mut out, t.minute.into(), 2),
            Some('S') => num(&mut out, t.second.into(), 2),
            Some('p') => out.push_str(if t.hour < 12 { "AM" } else { "PM" }),
            Some('y') => num(&mut out, t.year.rem_euclid(100), 2),
            Some('Y') => out.push_str(&t.year.to_string()),
            Some('u') => out.push_str(&(if t.weekday == 0 { 7 } else { t.weekday }).to_string()),
            Some('w') => out.push_str(&t.weekday.to_string()),
            Some('Z') => out.push_str("UTC"),
            Some('z') => out.push_str("+0000"),
            Some('D') => out.push_str(&format!(
                "{:02}/{:02}/{:02}",
                t.month,
                t.day,
                t.year.rem_euclid(100)
            )),
            Some('F') => out.push_str(&format!("{}-{:02}-{:02}", t.year, t.month, t.day)),
            Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", t.hour, t.minute, t.second)),
            Some('R') => out.push_str(&format!("{:02}:{:02}", t.hour, t.minute)),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                if unpadded {
                    out.push('-');
                }
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_and_directives() {
        // 2024-07-26 13:25:09 UTC, a Friday, day 208 of a leap year.
        let t = civil(1_722_000_309);
        assert_eq!(
            (t.year, t.month, t.day, t.hour, t.minute, t.second),
            (2024, 7, 26, 13, 25, 9)
        );
        assert_eq!((t.weekday, t.yearday), (5, 208));
        assert_eq!(
            strftime("%d %b %Y|%-d %B|%A %a %j %I%p %y %%", &t),
            "26 Jul 2024|26 July|Friday Fri 208 01PM 24 %"
        );
        assert_eq!(civil(0).weekday, 4);
        assert_eq!(civil(-1).year, 1969);
        assert_eq!(civil(951_782_400).month, 2, "2000-02-29");
        assert_eq!(civil(951_782_400).day, 29);
    }
}
