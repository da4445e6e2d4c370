//! Ported from structured-merge-diff v4.6.0 `merge/leaf_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;

/// The upstream `leafFieldsParser` schema, in structured-merge-diff's schema language.
const LEAF_FIELDS_PARSER: &str = r#"
    types:
    - name: leafFields
      map:
        fields:
        - name: numeric
          type:
            scalar: numeric
        - name: string
          type:
            scalar: string
        - name: bool
          type:
            scalar: boolean
"#;

/// A scenario typed by the upstream `leafFieldsParser`.
fn typed() -> Scenario {
    Scenario::new(LEAF_FIELDS_PARSER, "leafFields")
}

/// `TestUpdateLeaf`.
mod test_update_leaf {
    use super::*;

    /// `TestUpdateLeaf`, case "apply_twice".
    #[tokio::test]
    async fn apply_twice() {
        cases::apply_twice(typed()).run().await;
    }

    /// `TestUpdateLeaf`, case "apply_twice_different_versions".
    #[tokio::test]
    async fn apply_twice_different_versions() {
        Scenario::new(LEAF_FIELDS_PARSER, "leafFields")
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
            "#,
            )
            .apply(
                "default",
                "v2",
                r#"
                numeric: 2
                string: "string"
                bool: false
            "#,
            )
            .object(
                r#"
                numeric: 2
                string: "string"
                bool: false
            "#,
            )
            .managed("default", "v2", &[r#".numeric"#, r#".string"#, r#".bool"#])
            .run()
            .await;
    }

    /// `TestUpdateLeaf`, case "apply_update_apply_no_conflict".
    #[tokio::test]
    async fn apply_update_apply_no_conflict() {
        cases::apply_update_apply_no_conflict(typed()).run().await;
    }

    /// `TestUpdateLeaf`, case "apply_update_apply_no_conflict_different_version".
    #[tokio::test]
    async fn apply_update_apply_no_conflict_different_version() {
        Scenario::new(LEAF_FIELDS_PARSER, "leafFields")
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
            "#,
            )
            .update(
                "controller",
                "v2",
                r#"
                numeric: 1
                string: "string"
                bool: true
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                numeric: 2
                string: "string"
            "#,
            )
            .object(
                r#"
                numeric: 2
                string: "string"
                bool: true
            "#,
            )
            .managed("default", "v1", &[r#".numeric"#, r#".string"#])
            .managed("controller", "v2", &[r#".bool"#])
            .run()
            .await;
    }

    /// `TestUpdateLeaf`, case "apply_update_apply_with_conflict".
    #[tokio::test]
    async fn apply_update_apply_with_conflict() {
        cases::apply_update_apply_with_conflict(typed()).run().await;
    }

    /// `TestUpdateLeaf`, case "apply_update_apply_with_conflict_across_version".
    #[tokio::test]
    async fn apply_update_apply_with_conflict_across_version() {
        Scenario::new(LEAF_FIELDS_PARSER, "leafFields")
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
            "#,
            )
            .update(
                "controller",
                "v2",
                r#"
                numeric: 1
                string: "controller string"
                bool: true
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                numeric: 2
                string: "user string"
            "#,
            )
            .conflicts(&[("controller", r#".string"#)])
            .force_apply(
                "default",
                "v1",
                r#"
                numeric: 2
                string: "user string"
            "#,
            )
            .object(
                r#"
                numeric: 2
                string: "user string"
                bool: true
            "#,
            )
            .managed("default", "v1", &[r#".numeric"#, r#".string"#])
            .managed("controller", "v2", &[r#".bool"#])
            .run()
            .await;
    }

    /// `TestUpdateLeaf`, case "apply_twice_remove".
    #[tokio::test]
    async fn apply_twice_remove() {
        cases::apply_twice_remove(typed()).run().await;
    }

    /// `TestUpdateLeaf`, case "update_apply_omits".
    #[tokio::test]
    async fn update_apply_omits() {
        Scenario::new(LEAF_FIELDS_PARSER, "leafFields")
            .apply("default", "v1", r#"numeric: 2"#)
            .update("controller", "v1", r#"numeric: 1"#)
            .apply("default", "v1", r#""#)
            .object(r#"numeric: 1"#)
            .managed("controller", "v1", &[r#".numeric"#])
            .run()
            .await;
    }

    /// `TestUpdateLeaf`, case "apply_twice_remove_different_version".
    #[tokio::test]
    async fn apply_twice_remove_different_version() {
        Scenario::new(LEAF_FIELDS_PARSER, "leafFields")
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
                bool: false
            "#,
            )
            .apply("default", "v2", r#"string: "new string""#)
            .object(r#"string: "new string""#)
            .managed("default", "v2", &[r#".string"#])
            .run()
            .await;
    }

    /// `TestUpdateLeaf`, case "update_remove_empty_set".
    #[tokio::test]
    async fn update_remove_empty_set() {
        cases::update_remove_empty_set(typed()).run().await;
    }

    /// `TestUpdateLeaf`, case "apply_remove_empty_set".
    #[tokio::test]
    async fn apply_remove_empty_set() {
        cases::apply_remove_empty_set(typed()).run().await;
    }
}

/// The cases `TestDeduced` runs again with the deduced parser: each is its operations and
/// expectations, from the scenario `start`.
pub(super) mod cases {
    use super::Scenario;

    pub fn apply_twice(start: Scenario) -> Scenario {
        start
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                numeric: 2
                string: "string"
                bool: false
            "#,
            )
            .object(
                r#"
                numeric: 2
                string: "string"
                bool: false
            "#,
            )
            .managed("default", "v1", &[r#".numeric"#, r#".string"#, r#".bool"#])
    }

    pub fn apply_update_apply_no_conflict(start: Scenario) -> Scenario {
        start
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                numeric: 1
                string: "string"
                bool: true
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                numeric: 2
                string: "string"
            "#,
            )
            .object(
                r#"
                numeric: 2
                string: "string"
                bool: true
            "#,
            )
            .managed("default", "v1", &[r#".numeric"#, r#".string"#])
            .managed("controller", "v1", &[r#".bool"#])
    }

    pub fn apply_update_apply_with_conflict(start: Scenario) -> Scenario {
        start
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                numeric: 1
                string: "controller string"
                bool: true
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                numeric: 2
                string: "user string"
            "#,
            )
            .conflicts(&[("controller", r#".string"#)])
            .force_apply(
                "default",
                "v1",
                r#"
                numeric: 2
                string: "user string"
            "#,
            )
            .object(
                r#"
                numeric: 2
                string: "user string"
                bool: true
            "#,
            )
            .managed("default", "v1", &[r#".numeric"#, r#".string"#])
            .managed("controller", "v1", &[r#".bool"#])
    }

    pub fn apply_twice_remove(start: Scenario) -> Scenario {
        start
            .apply(
                "default",
                "v1",
                r#"
                numeric: 1
                string: "string"
                bool: false
            "#,
            )
            .apply("default", "v1", r#"string: "new string""#)
            .object(r#"string: "new string""#)
            .managed("default", "v1", &[r#".string"#])
    }

    pub fn update_remove_empty_set(start: Scenario) -> Scenario {
        start
            .apply("default", "v1", r#"string: "string""#)
            .update("controller", "v1", r#"string: "new string""#)
            .object(r#"string: "new string""#)
            .managed("controller", "v1", &[r#".string"#])
    }

    pub fn apply_remove_empty_set(start: Scenario) -> Scenario {
        start.apply("default", "v1", r#"string: "string""#).apply("default", "v1", r#""#).no_managers()
    }
}
