//! Ported from structured-merge-diff v4.6.0 `merge/preserve_unknown_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;

/// The upstream `preserveUnknownParser` schema, in structured-merge-diff's schema language.
const PRESERVE_UNKNOWN_PARSER: &str = r#"
    types:
    - name: type
      map:
        fields:
          - name: num
            type:
              scalar: numeric
        elementType:
          scalar: string
"#;

/// `TestPreserveUnknownFields`.
mod test_preserve_unknown_fields {
    use super::*;

    /// `TestPreserveUnknownFields`, case "preserve_unknown_fields".
    #[tokio::test]
    async fn preserve_unknown_fields() {
        Scenario::new(PRESERVE_UNKNOWN_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                num: 5
                unknown: value
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                num: 6
                unknown: new
            "#,
            )
            .object(
                r#"
                num: 6
                unknown: new
            "#,
            )
            .managed("default", "v1", &[r#".num"#, r#".unknown"#])
            .run()
            .await;
    }
}
