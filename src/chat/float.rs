//! Floats as Python writes them (`float.__repr__`, which `str()`, `repr()` and `json.dumps`
//! share): the shortest digits that read back, in fixed or exponent notation where Python
//! picks each.

/// `float.__repr__`: the shortest digits that read back, in fixed notation when the decimal
/// point falls within 16 places of them, else as `d.ddde+XX`.
pub fn write_float(out: &mut String, f: f64, inf: &str, nan: &str) {
    if f.is_nan() {
        out.push_str(nan);
        return;
    }
    if f.is_infinite() {
        if f < 0.0 {
            out.push('-');
        }
        out.push_str(inf);
        return;
    }
    // `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    // The decimal point's position after the first digit (Python's decpt).
    let decpt = exp + 1;
    if neg {
        out.push('-');
    }
    if (-3..=16).contains(&decpt) {
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(&digits);
        } else {
            let decpt = decpt as usize;
            if digits.len() <= decpt {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', decpt - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..decpt]);
                out.push('.');
                out.push_str(&digits[decpt..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push('0');
        }
        out.push_str(&e.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(f: f64) -> String {
        let mut s = String::new();
        write_float(&mut s, f, "inf", "nan");
        s
    }

    #[test]
    fn floats_as_python_writes_them() {
        for (f, want) in [
            (1e-7, "1e-07"),
            (1e21, "1e+21"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1.0, "1.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789.125, "123456789.125"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e300, "1.5e+300"),
            (f64::INFINITY, "inf"),
            (-f64::INFINITY, "-inf"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(float(f), want, "{f:e}");
        }
    }
}
