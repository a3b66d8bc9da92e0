//! The pickup check a read runs over a vault-bound scope (`cao_memory::vault::pickup_checked`): a process that
//! already found the listing equal to the stored note rows does not load them again while neither the listing nor
//! the stored projection changed; an edit, an add, a delete, and a projection another store instance changed are
//! each still noticed; a long-running service walks at most once per interval.

use super::vault::{recall, vault, write};
use cao_core::{CaoHome, Settings, SystemClock};
use cao_memory::MemoryService;
use cao_memory::vault::{Pickup, pickup_checked};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A pause so that the next write gets a change time distinct from the last (coarse file system clocks).
fn tick() {
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn an_unchanged_vault_is_checked_once_then_remembered_without_loading_rows() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let store = v.svc.storage();
    assert_eq!(
        pickup_checked(store).expect("pickup"),
        Pickup::Checked,
        "the first check loads the rows"
    );
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Remembered);
    assert_eq!(
        pickup_checked(&v.svc.clone().storage().clone()).expect("pickup"),
        Pickup::Remembered,
        "clones of the store share what was remembered"
    );
    // A new store instance of the same home remembers nothing: it checks fully once.
    let other = MemoryService::open(CaoHome::new(&v.home)).expect("second service");
    assert_eq!(pickup_checked(other.storage()).expect("pickup"), Pickup::Checked);
    assert_eq!(pickup_checked(other.storage()).expect("pickup"), Pickup::Remembered);
    assert!(
        !cao_memory::vault::pickup(store).expect("pickup"),
        "nothing to reconcile"
    );
}

#[test]
fn an_edit_an_add_and_a_delete_are_each_reconciled_after_a_remembered_check() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let store = v.svc.storage();
    pickup_checked(store).expect("pickup");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Remembered);

    tick();
    write(
        &v.root,
        "Notes/deploy.md",
        "# Deploy\n\nWe now deploy with canary releases.\n",
    );
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Reconciled, "an edit");
    // After a reconcile the next check loads the rows once, then remembers again.
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Checked);
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Remembered);
    let got = recall(&v, "canary");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].1, "We now deploy with canary releases.");

    tick();
    write(
        &v.root,
        "Notes/rollback.md",
        "# Rollback\n\nRollbacks use the previous green pool.\n",
    );
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Reconciled, "an add");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Checked);
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Remembered);
    assert_eq!(recall(&v, "rollbacks").len(), 1);

    std::fs::remove_file(v.root.join("Notes/rollback.md")).expect("delete");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Reconciled, "a delete");
    assert!(recall(&v, "rollbacks").is_empty());
}

#[test]
fn a_projection_changed_by_another_store_instance_is_noticed_though_the_files_are_unchanged() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let store = v.svc.storage();
    pickup_checked(store).expect("pickup");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Remembered);

    // Another instance reconciles the same files: the rows still match, but they are loaded again (the stored
    // projection token changed), never taken on trust.
    let other = MemoryService::open(CaoHome::new(&v.home)).expect("second service");
    cao_memory::vault::reconcile(other.storage(), true, false).expect("reconcile by the other instance");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Checked);
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Remembered);

    // Another instance, configured without the `Notes` mapping, applies a projection without its notes. The files
    // did not change, so only the projection token tells this process that its remembered check no longer holds:
    // it reconciles, and the note is recalled again.
    let settings_text = std::fs::read_to_string(v.home.join("settings.json")).expect("settings");
    let mut narrow: serde_json::Value = serde_json::from_str(&settings_text).expect("json");
    let mappings = narrow["memory"]["vault"]["vaults"][0]["mappings"]
        .as_array_mut()
        .expect("mappings");
    mappings.retain(|m| m["folder"] != "Notes");
    let narrow_svc = MemoryService::open_with(
        CaoHome::new(&v.home),
        Settings::from_value(narrow),
        Arc::new(SystemClock),
    )
    .expect("narrow service");
    cao_memory::vault::reconcile(narrow_svc.storage(), true, false).expect("narrow reconcile");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Reconciled);
    let got = recall(&v, "blue-green");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].2.as_deref(), Some("Notes/deploy.md"));
}

#[test]
fn a_forget_by_another_store_instance_makes_the_next_check_load_the_rows() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let store = v.svc.storage();
    pickup_checked(store).expect("pickup");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Remembered);
    let key = recall(&v, "blue-green")[0].0.clone();
    let other = MemoryService::open(CaoHome::new(&v.home)).expect("second service");
    other
        .forget(
            &v.ctx,
            cao_memory::ForgetArgs {
                key: key.clone(),
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget");
    assert_eq!(pickup_checked(store).expect("pickup"), Pickup::Checked);
    assert!(recall(&v, "blue-green").is_empty(), "the forgotten note stays out");
}

#[test]
fn a_long_running_service_walks_the_vault_at_most_once_per_interval() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    v.svc.set_vault_walk_interval(Some(Duration::from_secs(3600)));
    assert_eq!(recall(&v, "blue-green").len(), 1, "the first read walks");
    tick();
    write(
        &v.root,
        "Notes/deploy.md",
        "# Deploy\n\nWe now deploy with canary releases.\n",
    );
    // Within the interval the read serves the last projection (its row reads as stale on the payload).
    assert!(recall(&v, "canary").is_empty());
    let served = v
        .svc
        .recall(
            &v.ctx,
            cao_memory::RecallArgs {
                query: Some("blue-green".into()),
                scope: Some(cao_core::Scope::Project),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories;
    assert_eq!(served.len(), 1, "{served:?}");
    assert_eq!(served[0].index_freshness, Some(cao_memory::IndexFreshness::Stale));
    // An explicit pickup always walks.
    assert!(cao_memory::vault::pickup(v.svc.storage()).expect("pickup"));
    assert_eq!(recall(&v, "canary").len(), 1);

    // With a short interval an edit is recalled once the interval has passed, without any command.
    v.svc.set_vault_walk_interval(Some(Duration::from_millis(50)));
    tick();
    write(
        &v.root,
        "Notes/deploy.md",
        "# Deploy\n\nWe deploy with rainbow releases now.\n",
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while recall(&v, "rainbow").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the edit was not picked up within the deadline"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Without an interval (a one-shot command) every read walks.
    v.svc.set_vault_walk_interval(None);
    write(
        &v.root,
        "Notes/deploy.md",
        "# Deploy\n\nWe deploy with violet releases now.\n",
    );
    assert_eq!(recall(&v, "violet").len(), 1);
}
