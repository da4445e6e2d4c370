//! Ported from structured-merge-diff v4.6.0 `merge/key_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;

/// The upstream `associativeListParser` schema, in structured-merge-diff's schema language.
pub(super) const ASSOCIATIVE_LIST_PARSER: &str = r#"
    types:
    - name: type
      map:
        fields:
          - name: list
            type:
              namedType: associativeList
    - name: associativeList
      list:
        elementType:
          namedType: myElement
        elementRelationship: associative
        keys:
        - name
    - name: myElement
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            scalar: numeric
"#;

/// `TestUpdateAssociativeLists`.
mod test_update_associative_lists {
    use super::*;

    /// `TestUpdateAssociativeLists`, case "removing_obsolete_applied_structs".
    #[tokio::test]
    async fn removing_obsolete_applied_structs() {
        Scenario::new(ASSOCIATIVE_LIST_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - name: a
                  value: 1
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - name: b
                  value: 2
            "#,
            )
            .object(
                r#"
                list:
                - name: b
                  value: 2
            "#,
            )
            .managed("default", "v1", &[r#".list[name="b"]"#, r#".list[name="b"].name"#, r#".list[name="b"].value"#])
            .run()
            .await;
    }
}
