//! [`text_enum!`](crate::text_enum): a fieldless enum declared once with the text each variant
//! is stored, queried and sent as, and [`TextValue`], what every such enum is to code generic
//! over them (an adapter reading any of them from a text column).

/// A value that is one of a fixed set of texts: every enum [`text_enum!`](crate::text_enum)
/// declares.
pub trait TextValue: Copy + Send + Sync + 'static {
    /// The text this value is stored and sent as.
    fn text(self) -> &'static str;
    /// The value whose text is exactly `s`.
    fn from_text(s: &str) -> Option<Self>;
}

/// Declares a fieldless enum from one list of `Variant => "text"` pairs and generates:
///
/// - `ALL`: every variant, in declaration order (an array, so `ALL.into_iter()` yields values);
/// - `as_str(self) -> &'static str`: the variant's text;
/// - `parse(&str) -> Option<Self>`: the variant whose text is exactly the argument;
/// - `Display`, writing the text;
/// - [`TextValue`], the same two for code generic over such enums.
///
/// Attributes (docs, derives, serde) on the enum and on each variant are kept as written. The
/// enum must be `Copy`. A text listed twice makes `parse` unreachable for the second variant,
/// which `-D warnings` refuses.
///
/// ```
/// fleetdesk_kernel::text_enum! {
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Light {
///         Red => "red",
///         Green => "green",
///     }
/// }
/// assert_eq!(Light::parse("red"), Some(Light::Red));
/// assert_eq!(Light::Green.to_string(), "green");
/// ```
#[macro_export]
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The text this value is stored and sent as.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The text of every value `rule` accepts, in declaration order: a set bound into
            /// SQL as a `text[]` (`status = ANY($n)`), so the statement holds none of its own.
            pub fn texts(rule: impl Fn($name) -> bool) -> Vec<&'static str> {
                Self::ALL.into_iter().filter(|v| rule(*v)).map($name::as_str).collect()
            }

            /// The value whose text is exactly `s`.
            pub fn parse(s: &str) -> Option<$name> {
                match s {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl $crate::TextValue for $name {
            fn text(self) -> &'static str {
                self.as_str()
            }

            fn from_text(s: &str) -> Option<$name> {
                $name::parse(s)
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    crate::text_enum! {
        /// A test enum: a documented variant, a renamed one and a trailing comma.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        enum Sample {
            /// The first.
            #[default]
            One => "one",
            TwoWords => "two_words",
            Colon => "a:b",
        }
    }

    #[test]
    fn lists_every_variant_in_order() {
        assert_eq!(Sample::ALL, [Sample::One, Sample::TwoWords, Sample::Colon]);
        assert_eq!(Sample::default(), Sample::One);
        assert_eq!(Sample::texts(|s| s != Sample::One), ["two_words", "a:b"]);
    }

    #[test]
    fn text_round_trips_for_every_variant() {
        for v in Sample::ALL {
            assert_eq!(Sample::parse(v.as_str()), Some(v));
            assert_eq!(v.to_string(), v.as_str());
        }
        assert_eq!(Sample::TwoWords.as_str(), "two_words");
        assert_eq!(Sample::Colon.as_str(), "a:b");
    }

    #[test]
    fn the_trait_answers_as_the_enum_does() {
        use crate::TextValue;
        for v in Sample::ALL {
            assert_eq!(v.text(), v.as_str());
            assert_eq!(Sample::from_text(v.as_str()), Some(v));
        }
        assert_eq!(Sample::from_text("One"), None);
    }

    #[test]
    fn parse_is_exact() {
        assert_eq!(Sample::parse("One"), None);
        assert_eq!(Sample::parse(" one"), None);
        assert_eq!(Sample::parse(""), None);
        assert_eq!(Sample::parse("TwoWords"), None);
    }
}
