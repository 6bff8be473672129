//! Numeric `range` bounds as one term type: tantivy's fast-field range query needs its two
//! bounds of one numeric type (an integer lower bound with a fractional upper bound made it
//! panic). On integer fields (`long`, `integer`, `short`, `byte`) the bounds become inclusive
//! integers, as Elasticsearch rounds them (`gte 4.5` is `gte 5`, `lt 4.5` is `lte 4`); on
//! floating-point fields bounds stay as given, all as floats as soon as one is fractional.
//!
//! Pure: numbers in, bounds out ([`numeric_bounds`]); [`terms`] makes them tantivy terms.

use std::ops::Bound;

use tantivy::Term;

use super::ctx::Ctx;

/// The bounds of a numeric range, one type for both ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NumBounds {
    /// Nothing can match (`gte 5, lt 5` on integers).
    Empty,
    Int(Bound<i64>, Bound<i64>),
    Float(Bound<f64>, Bound<f64>),
}

fn map<T, U>(b: Bound<T>, f: impl Fn(T) -> U) -> Bound<U> {
    match b {
        Bound::Included(x) => Bound::Included(f(x)),
        Bound::Excluded(x) => Bound::Excluded(f(x)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The bounds of `gt`/`gte` (lower, `gt` first) and `lt`/`lte` (upper, `lt` first).
pub fn numeric_bounds(
    integer: bool,
    (gt, gte): (Option<f64>, Option<f64>),
    (lt, lte): (Option<f64>, Option<f64>),
) -> NumBounds {
    let lo = match (gt, gte) {
        (Some(x), _) => Bound::Excluded(x),
        (None, Some(x)) => Bound::Included(x),
        _ => Bound::Unbounded,
    };
    let hi = match (lt, lte) {
        (Some(x), _) => Bound::Excluded(x),
        (None, Some(x)) => Bound::Included(x),
        _ => Bound::Unbounded,
    };
    if integer {
        let lo = match lo {
            Bound::Excluded(x) => Some(x.floor() + 1.0),
            Bound::Included(x) => Some(x.ceil()),
            Bound::Unbounded => None,
        };
        let hi = match hi {
            Bound::Excluded(x) => Some(x.ceil() - 1.0),
            Bound::Included(x) => Some(x.floor()),
            Bound::Unbounded => None,
        };
        let (min, max) = (i64::MIN as f64, i64::MAX as f64);
        if lo.is_some_and(|l| l > max) || hi.is_some_and(|h| h < min) {
            return NumBounds::Empty;
        }
        if let (Some(l), Some(h)) = (lo, hi) {
            if l > h {
                return NumBounds::Empty;
            }
        }
        let clamp = |x: f64| x.clamp(min, max) as i64;
        return NumBounds::Int(
            lo.map_or(Bound::Unbounded, |l| Bound::Included(clamp(l))),
            hi.map_or(Bound::Unbounded, |h| Bound::Included(clamp(h))),
        );
    }
    let fractional = [gt, gte, lt, lte]
        .iter()
        .flatten()
        .any(|x| x.fract() != 0.0 || x.abs() >= i64::MAX as f64);
    if fractional {
        NumBounds::Float(lo, hi)
    } else {
        NumBounds::Int(map(lo, |x| x as i64), map(hi, |x| x as i64))
    }
}

fn int_term(ctx: &Ctx<'_>, path: &str, x: i64) -> Term {
    let mut t = Term::from_field_json_path(ctx.fields.kw, path, true);
    t.append_type_and_fast_value(x);
    t
}

fn float_term(ctx: &Ctx<'_>, path: &str, x: f64) -> Term {
    let mut t = Term::from_field_json_path(ctx.fields.kw, path, true);
    t.append_type_and_fast_value(x);
    t
}

/// The tantivy terms of numeric bounds on the keyword JSON field at `path`.
pub fn terms(ctx: &Ctx<'_>, path: &str, b: NumBounds) -> Option<(Bound<Term>, Bound<Term>)> {
    match b {
        NumBounds::Empty => None,
        NumBounds::Int(lo, hi) => Some((
            map(lo, |x| int_term(ctx, path, x)),
            map(hi, |x| int_term(ctx, path, x)),
        )),
        NumBounds::Float(lo, hi) => Some((
            map(lo, |x| float_term(ctx, path, x)),
            map(hi, |x| float_term(ctx, path, x)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Bound::*;

    #[test]
    fn bounds_as_elasticsearch_rounds_them() {
        let int = |lo, hi| numeric_bounds(true, lo, hi);
        let flt = |lo, hi| numeric_bounds(false, lo, hi);
        let table: Vec<(NumBounds, NumBounds)> = vec![
            (
                int((None, Some(4.5)), (Some(8.0), None)),
                NumBounds::Int(Included(5), Included(7)),
            ),
            (
                int((Some(4.5), None), (None, Some(8.5))),
                NumBounds::Int(Included(5), Included(8)),
            ),
            (int((Some(4.0), None), (Some(4.5), None)), NumBounds::Empty),
            (
                int((None, None), (Some(4.5), None)),
                NumBounds::Int(Unbounded, Included(4)),
            ),
            (int((None, Some(1e30)), (None, None)), NumBounds::Empty),
            (
                int((None, Some(-1e30)), (None, None)),
                NumBounds::Int(Included(i64::MIN), Unbounded),
            ),
            (
                flt((None, Some(1.0)), (Some(3.5), None)),
                NumBounds::Float(Included(1.0), Excluded(3.5)),
            ),
            (
                flt((None, Some(2.0)), (Some(4.0), None)),
                NumBounds::Int(Included(2), Excluded(4)),
            ),
            (
                flt((Some(1.5), None), (None, None)),
                NumBounds::Float(Excluded(1.5), Unbounded),
            ),
        ];
        for (got, want) in table {
            assert_eq!(got, want);
        }
    }
}
