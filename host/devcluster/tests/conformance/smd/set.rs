//! Ported from structured-merge-diff v4.6.0 `merge/set_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;

/// The upstream `setFieldsParser` schema, in structured-merge-diff's schema language.
const SET_FIELDS_PARSER: &str = r#"
    types:
    - name: sets
      map:
        fields:
        - name: list
          type:
            list:
              elementType:
                scalar: string
              elementRelationship: associative
"#;

/// `TestUpdateSet`.
mod test_update_set {
    use super::*;

    /// `TestUpdateSet`, case "apply_twice".
    #[tokio::test]
    async fn apply_twice() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - c
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .object(
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .managed("default", "v1", &[r#".list[="a"]"#, r#".list[="b"]"#, r#".list[="c"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_update_apply_no_overlap".
    #[tokio::test]
    async fn apply_update_apply_no_overlap() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - c
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - aprime
                - c
                - cprime
            "#,
            )
            .object(
                r#"
                list:
                - a
                - b
                - aprime
                - c
                - d
                - cprime
            "#,
            )
            .managed(
                "default",
                "v1",
                &[r#".list[="a"]"#, r#".list[="aprime"]"#, r#".list[="c"]"#, r#".list[="cprime"]"#],
            )
            .managed("controller", "v1", &[r#".list[="b"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_update_apply_no_overlap_and_different_version".
    #[tokio::test]
    async fn apply_update_apply_no_overlap_and_different_version() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - c
            "#,
            )
            .update(
                "controller",
                "v2",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - aprime
                - c
                - cprime
            "#,
            )
            .object(
                r#"
                list:
                - a
                - b
                - aprime
                - c
                - d
                - cprime
            "#,
            )
            .managed(
                "default",
                "v1",
                &[r#".list[="a"]"#, r#".list[="aprime"]"#, r#".list[="c"]"#, r#".list[="cprime"]"#],
            )
            .managed("controller", "v2", &[r#".list[="b"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_update_apply_with_overlap".
    #[tokio::test]
    async fn apply_update_apply_with_overlap() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - c
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
            "#,
            )
            .object(
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .managed("default", "v1", &[r#".list[="a"]"#, r#".list[="b"]"#, r#".list[="c"]"#])
            .managed("controller", "v1", &[r#".list[="b"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_update_apply_with_overlap_and_different_version".
    #[tokio::test]
    async fn apply_update_apply_with_overlap_and_different_version() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - c
            "#,
            )
            .update(
                "controller",
                "v2",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
            "#,
            )
            .object(
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .managed("default", "v1", &[r#".list[="a"]"#, r#".list[="b"]"#, r#".list[="c"]"#])
            .managed("controller", "v2", &[r#".list[="b"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_twice_reorder".
    #[tokio::test]
    async fn apply_twice_reorder() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - d
                - c
                - b
            "#,
            )
            .object(
                r#"
                list:
                - a
                - d
                - c
                - b
            "#,
            )
            .managed("default", "v1", &[r#".list[="a"]"#, r#".list[="b"]"#, r#".list[="c"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_update_apply_reorder".
    #[tokio::test]
    async fn apply_update_apply_reorder() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                list:
                - a
                - d
                - c
                - b
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .object(
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .managed("default", "v1", &[r#".list[="a"]"#, r#".list[="b"]"#, r#".list[="c"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_update_apply_reorder_across_versions".
    #[tokio::test]
    async fn apply_update_apply_reorder_across_versions() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                list:
                - a
                - d
                - c
                - b
            "#,
            )
            .apply(
                "default",
                "v2",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .object(
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .managed("default", "v2", &[r#".list[="a"]"#, r#".list[="b"]"#, r#".list[="c"]"#, r#".list[="d"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_twice_remove".
    #[tokio::test]
    async fn apply_twice_remove() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - c
            "#,
            )
            .object(
                r#"
                list:
                - a
                - c
            "#,
            )
            .managed("default", "v1", &[r#".list[="a"]"#, r#".list[="c"]"#])
            .run()
            .await;
    }

    /// `TestUpdateSet`, case "apply_twice_remove_across_versions".
    #[tokio::test]
    async fn apply_twice_remove_across_versions() {
        Scenario::new(SET_FIELDS_PARSER, "sets")
            .apply(
                "default",
                "v1",
                r#"
                list:
                - a
                - b
                - c
                - d
            "#,
            )
            .apply(
                "default",
                "v2",
                r#"
                list:
                - a
                - c
                - e
            "#,
            )
            .object(
                r#"
                list:
                - a
                - c
                - e
            "#,
            )
            .managed("default", "v2", &[r#".list[="a"]"#, r#".list[="c"]"#, r#".list[="e"]"#])
            .run()
            .await;
    }
}
