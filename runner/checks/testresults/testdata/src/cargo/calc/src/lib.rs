//! Calc.

/// Adds, wrongly.
///
/// ```
/// assert_eq!(calc::add(0, 0), 0);
/// ```
pub fn add(a: i64, b: i64) -> i64 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_adds() {
        assert_eq!(add(2, 3), 5);
    }

    #[test]
    fn zero() {
        assert_eq!(add(0, 0), 0);
    }

    #[test]
    #[ignore = "flaky on CI"]
    fn ignored_one() {}

    #[test]
    #[should_panic]
    fn panics() {
        panic!("boom");
    }

    mod nested {
        #[test]
        fn deep() {
            println!("output from deep");
        }
    }
}
