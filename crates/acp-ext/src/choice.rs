//! Closed sets of names for command-line choices (`--format`, `--record-format`,
//! `--min-severity`, `--namespace`): each is declared once with `choices!`,
//! which gives the enum its names, `ALL`, `Display` and `FromStr`, and one
//! error type, [`UnknownChoice`], for every name that is not in the set.

use std::fmt;

/// A name that is none of a choice's names.
///
/// ```
/// use acp_ext::check::Severity;
///
/// let e = "fatal".parse::<Severity>().unwrap_err();
/// assert_eq!(e.given, "fatal");
/// assert_eq!(e.to_string(), r#"unknown severity "fatal": expected info, warning or error"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnknownChoice {
    /// What was being chosen (`format`, `severity`…).
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The names that exist.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} {:?}: expected ", self.what, self.given)?;
        for (i, name) in self.expected.iter().enumerate() {
            let sep = match i {
                0 => "",
                i if i + 1 == self.expected.len() => " or ",
                _ => ", ",
            };
            write!(f, "{sep}{name}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownChoice {}

/// Gives a fieldless enum its command-line names: `name()`, `ALL` (in the
/// order listed), `NAMES`, `Display` and `FromStr` (which also takes the
/// aliases after `|`, and fails with [`UnknownChoice`]).
macro_rules! choices {
    ($ty:ident, $what:literal { $($variant:ident = $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        impl $ty {
            /// Every value, in the order its names are listed.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The names, in the order of [`Self::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// The name used on the command line.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::choice::UnknownChoice;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name $(| $alias)* => Ok($ty::$variant),)+
                    _ => Err($crate::choice::UnknownChoice {
                        what: $what,
                        given: s.to_owned(),
                        expected: Self::NAMES,
                    }),
                }
            }
        }
    };
}

pub(crate) use choices;

#[cfg(test)]
mod tests {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Pet {
        Cat,
        Dog,
    }

    choices!(Pet, "pet" { Cat = "cat" | "kitty", Dog = "dog" });

    #[test]
    fn names_parse_back_and_aliases_are_taken() {
        for &pet in Pet::ALL {
            assert_eq!(pet.name().parse::<Pet>(), Ok(pet));
            assert_eq!(pet.to_string(), pet.name());
        }
        assert_eq!("kitty".parse::<Pet>(), Ok(Pet::Cat));
        assert_eq!(Pet::NAMES, ["cat", "dog"]);
    }

    #[test]
    fn an_unknown_name_lists_the_names_but_not_the_aliases() {
        let e = "Cat".parse::<Pet>().unwrap_err();
        assert_eq!(e.given, "Cat");
        assert_eq!(e.to_string(), r#"unknown pet "Cat": expected cat or dog"#);
    }
}
