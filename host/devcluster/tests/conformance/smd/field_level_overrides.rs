//! Ported from structured-merge-diff v4.6.0 `merge/field_level_overrides_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;

/// The upstream `overrideStructTypeParser` schema, in structured-merge-diff's schema language.
const OVERRIDE_STRUCT_TYPE_PARSER: &str = r#"
    types:
    - name: type
      map:
        fields:
          - name: associativeListReference
            type:
              namedType: associativeList
              elementRelationship: atomic
          - name: separableInlineList
            type:
              list:
                elementType:
                  scalar: numeric
                elementRelationship: atomic
              elementRelationship: associative
          - name: separableMapReference
            type:
              namedType: atomicMap
              elementRelationship: separable
          - name: atomicMapReference
            type:
              namedType: unspecifiedMap
              elementRelationship: atomic

    - name: associativeList
      list:
        elementType:
          namedType: unspecifiedMap
          elementRelationship: atomic
        elementRelationship: associative
        keys:
        - name
    - name: unspecifiedMap
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            scalar: numeric
    - name: atomicMap
      map:
        elementRelationship: atomic
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            scalar: numeric
"#;

/// `TestFieldLevelOverrides`.
mod test_field_level_overrides {
    use super::*;

    /// `TestFieldLevelOverrides`, case "test_override_atomic_map_with_separable".
    #[tokio::test]
    async fn test_override_atomic_map_with_separable() {
        Scenario::new(OVERRIDE_STRUCT_TYPE_PARSER, "type")
            .apply(
                "apply_one",
                "v1",
                r#"
                separableMapReference:
                  name: a
            "#,
            )
            .apply(
                "apply_two",
                "v1",
                r#"
                separableMapReference:
                  value: 2
            "#,
            )
            .object(
                r#"
                separableMapReference:
                  name: a
                  value: 2
            "#,
            )
            .managed("apply_one", "v1", &[r#".separableMapReference.name"#])
            .managed("apply_two", "v1", &[r#".separableMapReference.value"#])
            .run()
            .await;
    }

    /// `TestFieldLevelOverrides`, case "test_override_unspecified_map_with_atomic".
    #[tokio::test]
    async fn test_override_unspecified_map_with_atomic() {
        Scenario::new(OVERRIDE_STRUCT_TYPE_PARSER, "type")
            .apply(
                "apply_one",
                "v1",
                r#"
                atomicMapReference:
                  name: a
            "#,
            )
            .apply(
                "apply_two",
                "v1",
                r#"
                atomicMapReference:
                  value: 2
            "#,
            )
            .conflicts(&[("apply_one", r#".atomicMapReference"#)])
            .apply(
                "apply_one",
                "v1",
                r#"
                atomicMapReference:
                  name: b
                  value: 2
            "#,
            )
            .object(
                r#"
                atomicMapReference:
                  name: b
                  value: 2
            "#,
            )
            .managed("apply_one", "v1", &[r#".atomicMapReference"#])
            .run()
            .await;
    }

    /// `TestFieldLevelOverrides`, case "test_override_associative_list_with_atomic".
    #[tokio::test]
    async fn test_override_associative_list_with_atomic() {
        Scenario::new(OVERRIDE_STRUCT_TYPE_PARSER, "type")
            .apply(
                "apply_one",
                "v1",
                r#"
                associativeListReference:
                  - name: a
                    value: 1
            "#,
            )
            .apply(
                "apply_two",
                "v1",
                r#"
                associativeListReference:
                - name: b
                  value: 2
            "#,
            )
            .conflicts(&[("apply_one", r#".associativeListReference"#)])
            .object(
                r#"
                associativeListReference:
                  - name: a
                    value: 1
            "#,
            )
            .managed("apply_one", "v1", &[r#".associativeListReference"#])
            .run()
            .await;
    }

    /// `TestFieldLevelOverrides`, case "test_override_inline_atomic_list_with_associative".
    #[tokio::test]
    async fn test_override_inline_atomic_list_with_associative() {
        Scenario::new(OVERRIDE_STRUCT_TYPE_PARSER, "type")
            .apply(
                "apply_one",
                "v1",
                r#"
                separableInlineList:
                - 1
            "#,
            )
            .apply(
                "apply_two",
                "v1",
                r#"
                separableInlineList:
                - 2
            "#,
            )
            .object(
                r#"
                separableInlineList:
                - 1
                - 2
            "#,
            )
            .managed("apply_one", "v1", &[r#".separableInlineList[=1]"#])
            .managed("apply_two", "v1", &[r#".separableInlineList[=2]"#])
            .run()
            .await;
    }
}
