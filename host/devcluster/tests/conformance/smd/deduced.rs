//! Ported from structured-merge-diff v4.6.0 `merge/deduced_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;
use super::leaf;

/// `TestDeduced`.
mod test_deduced {
    use super::*;

    /// `TestDeduced`, case "leaf_apply_twice": `TestUpdateLeaf`'s "apply_twice", deduced.
    #[tokio::test]
    async fn leaf_apply_twice() {
        leaf::cases::apply_twice(Scenario::deduced()).run().await;
    }

    /// `TestDeduced`, case "leaf_apply_update_apply_no_conflict": `TestUpdateLeaf`'s "apply_update_apply_no_conflict", deduced.
    #[tokio::test]
    async fn leaf_apply_update_apply_no_conflict() {
        leaf::cases::apply_update_apply_no_conflict(Scenario::deduced()).run().await;
    }

    /// `TestDeduced`, case "leaf_apply_update_apply_with_conflict": `TestUpdateLeaf`'s "apply_update_apply_with_conflict", deduced.
    #[tokio::test]
    async fn leaf_apply_update_apply_with_conflict() {
        leaf::cases::apply_update_apply_with_conflict(Scenario::deduced()).run().await;
    }

    /// `TestDeduced`, case "leaf_apply_twice_remove": `TestUpdateLeaf`'s "apply_twice_remove", deduced.
    #[tokio::test]
    async fn leaf_apply_twice_remove() {
        leaf::cases::apply_twice_remove(Scenario::deduced()).run().await;
    }

    /// `TestDeduced`, case "leaf_update_remove_empty_set": `TestUpdateLeaf`'s "update_remove_empty_set", deduced.
    #[tokio::test]
    async fn leaf_update_remove_empty_set() {
        leaf::cases::update_remove_empty_set(Scenario::deduced()).run().await;
    }

    /// `TestDeduced`, case "apply_twice_list_is_atomic".
    #[tokio::test]
    async fn apply_twice_list_is_atomic() {
        Scenario::deduced()
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
            .managed("default", "v1", &[r#".list"#])
            .run()
            .await;
    }

    /// `TestDeduced`, case "apply_update_apply_list".
    #[tokio::test]
    async fn apply_update_apply_list() {
        Scenario::deduced()
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
            .force_apply(
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
            "#,
            )
            .managed("default", "v1", &[r#".list"#])
            .run()
            .await;
    }

    /// `TestDeduced`, case "leaf_apply_remove_empty_set": `TestUpdateLeaf`'s "apply_remove_empty_set", deduced.
    #[tokio::test]
    async fn leaf_apply_remove_empty_set() {
        leaf::cases::apply_remove_empty_set(Scenario::deduced()).run().await;
    }

    /// `TestDeduced`, case "apply_update_apply_nested".
    #[tokio::test]
    async fn apply_update_apply_nested() {
        Scenario::deduced()
            .apply(
                "default",
                "v1",
                r#"
                a: 1
                b:
                  c:
                    d: 2
                    e:
                    - 1
                    - 2
                    - 3
                    f:
                    - name: n
                      value: 1
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                a: 1
                b:
                  c:
                    d: 3
                    e:
                    - 1
                    - 2
                    - 3
                    - 4
                    f:
                    - name: n
                      value: 2
                g: 5
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                a: 2
                b:
                  c:
                    d: 2
                    e:
                    - 3
                    - 2
                    - 1
                    f:
                    - name: n
                      value: 1
            "#,
            )
            .conflicts(&[("controller", r#".b.c.d"#), ("controller", r#".b.c.e"#), ("controller", r#".b.c.f"#)])
            .force_apply(
                "default",
                "v1",
                r#"
                a: 2
                b:
                  c:
                    d: 2
                    e:
                    - 3
                    - 2
                    - 1
                    f:
                    - name: n
                      value: 1
            "#,
            )
            .object(
                r#"
                a: 2
                b:
                  c:
                    d: 2
                    e:
                    - 3
                    - 2
                    - 1
                    f:
                    - name: n
                      value: 1
                g: 5
            "#,
            )
            .run()
            .await;
    }

    /// `TestDeduced`, case "apply_update_apply_nested_different_version".
    #[tokio::test]
    async fn apply_update_apply_nested_different_version() {
        Scenario::deduced()
            .apply(
                "default",
                "v1",
                r#"
                a: 1
                b:
                  c:
                    d: 2
                    e:
                    - 1
                    - 2
                    - 3
                    f:
                    - name: n
                      value: 1
            "#,
            )
            .update(
                "controller",
                "v2",
                r#"
                a: 1
                b:
                  c:
                    d: 3
                    e:
                    - 1
                    - 2
                    - 3
                    - 4
                    f:
                    - name: n
                      value: 2
                g: 5
            "#,
            )
            .apply(
                "default",
                "v3",
                r#"
                a: 2
                b:
                  c:
                    d: 2
                    e:
                    - 3
                    - 2
                    - 1
                    f:
                    - name: n
                      value: 1
            "#,
            )
            .conflicts(&[("controller", r#".b.c.d"#), ("controller", r#".b.c.e"#), ("controller", r#".b.c.f"#)])
            .force_apply(
                "default",
                "v3",
                r#"
                a: 2
                b:
                  c:
                    d: 2
                    e:
                    - 3
                    - 2
                    - 1
                    f:
                    - name: n
                      value: 1
            "#,
            )
            .object(
                r#"
                a: 2
                b:
                  c:
                    d: 2
                    e:
                    - 3
                    - 2
                    - 1
                    f:
                    - name: n
                      value: 1
                g: 5
            "#,
            )
            .run()
            .await;
    }
}
