// @generated automatically by Diesel CLI.

pub mod sql_types {
    #[derive(diesel::sql_types::SqlType)]
    #[diesel(postgres_type(name = "tsvector", schema = "pg_catalog"))]
    pub struct Tsvector;
}

diesel::table! {
    account_generations (id) {
        id -> Uuid,
        slot_id -> Uuid,
        generation -> Int4,
        state -> Text,
        onboarded_at -> Nullable<Date>,
        avatar_sha256 -> Nullable<Text>,
        avatar_mime -> Nullable<Text>,
        avatar_bytes -> Nullable<Int8>,
        avatar_width -> Nullable<Int4>,
        avatar_height -> Nullable<Int4>,
        avatar_key -> Nullable<Text>,
        avatar_updated_at -> Nullable<Timestamptz>,
        opened_at -> Timestamptz,
        closed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    account_metrics (slot_id, captured_at) {
        slot_id -> Uuid,
        captured_at -> Timestamptz,
        followers -> Int8,
        agent_id -> Nullable<Uuid>,
        recorded_at -> Timestamptz,
    }
}

diesel::table! {
    account_slots (id) {
        id -> Uuid,
        organization_id -> Uuid,
        workspace_id -> Uuid,
        persona_id -> Uuid,
        code -> Text,
        legacy_code -> Nullable<Text>,
        platform -> Text,
        market -> Text,
        timezone -> Text,
        handle -> Nullable<Text>,
        daily_target -> Int4,
        publishing -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    account_state_changes (id) {
        id -> Uuid,
        generation_id -> Uuid,
        from_state -> Text,
        to_state -> Text,
        reported -> Text,
        reason -> Nullable<Text>,
        occurred_at -> Timestamptz,
        agent_id -> Nullable<Uuid>,
        origin -> Nullable<Jsonb>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    ad_accounts (workspace_id, id) {
        workspace_id -> Uuid,
        id -> Text,
        name -> Text,
        currency -> Text,
        token_env -> Text,
        instagram_user_id -> Nullable<Text>,
        status -> Nullable<Text>,
        synced_at -> Nullable<Timestamptz>,
        sync_error -> Nullable<Text>,
    }
}

diesel::table! {
    ad_campaign_days (workspace_id, campaign_id, day) {
        workspace_id -> Uuid,
        campaign_id -> Text,
        day -> Date,
        spend -> Numeric,
        impressions -> Int8,
        reach -> Int8,
        clicks -> Int8,
        results -> Int8,
    }
}

diesel::table! {
    ad_campaigns (workspace_id, id) {
        workspace_id -> Uuid,
        id -> Text,
        ad_account_id -> Text,
        name -> Text,
        status -> Text,
        by_fleetdesk -> Bool,
        synced_at -> Timestamptz,
    }
}

diesel::table! {
    ad_credit_ledger (id) {
        id -> Int8,
        organization_id -> Uuid,
        research_id -> Uuid,
        position -> Int2,
        credits -> Int8,
        reason -> Text,
        charged_at -> Timestamptz,
    }
}

diesel::table! {
    ad_picks (id) {
        id -> Uuid,
        organization_id -> Uuid,
        number -> Int8,
        workspace_id -> Uuid,
        slot_id -> Uuid,
        research_id -> Uuid,
        position -> Int2,
        note -> Nullable<Text>,
        card -> Jsonb,
        status -> Text,
        post_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        created_by -> Uuid,
        drafted_at -> Nullable<Timestamptz>,
        cancelled_at -> Nullable<Timestamptz>,
        cancelled_by -> Nullable<Uuid>,
    }
}

diesel::table! {
    ad_proposals (id) {
        id -> Uuid,
        organization_id -> Uuid,
        workspace_id -> Uuid,
        agent_id -> Uuid,
        kind -> Text,
        status -> Text,
        target -> Text,
        ad_id -> Nullable<Text>,
        post_id -> Nullable<Uuid>,
        ad_account_id -> Nullable<Text>,
        budget_type -> Nullable<Text>,
        amount -> Nullable<Numeric>,
        days -> Nullable<Int4>,
        countries -> Array<Nullable<Text>>,
        reason -> Text,
        decision_id -> Uuid,
        result -> Nullable<Jsonb>,
        created_at -> Timestamptz,
        decided_by -> Nullable<Jsonb>,
        decided_at -> Nullable<Timestamptz>,
        executed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    ad_research (id) {
        id -> Uuid,
        organization_id -> Uuid,
        workspace_id -> Uuid,
        agent_id -> Uuid,
        kind -> Text,
        lane -> Nullable<Text>,
        price -> Int8,
        credits_quoted -> Int8,
        status -> Text,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        approved_by -> Nullable<Jsonb>,
        approved_at -> Nullable<Timestamptz>,
        message_ref -> Nullable<Text>,
        finished_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    ad_research_items (research_id, position) {
        research_id -> Uuid,
        position -> Int2,
        organization_id -> Uuid,
        item -> Text,
        key -> Text,
        searched -> Text,
        cached_at_quote -> Bool,
        outcome -> Nullable<Text>,
        card -> Nullable<Jsonb>,
        error -> Nullable<Text>,
        done_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    ad_research_quota (day) {
        day -> Date,
        used -> Int8,
    }
}

diesel::table! {
    ads (workspace_id, id) {
        workspace_id -> Uuid,
        id -> Text,
        ad_account_id -> Text,
        campaign_id -> Text,
        adset_id -> Text,
        name -> Text,
        kind -> Text,
        status -> Text,
        budget_type -> Text,
        budget -> Numeric,
        starts_at -> Nullable<Timestamptz>,
        ends_at -> Nullable<Timestamptz>,
        story_id -> Nullable<Text>,
        post_id -> Nullable<Uuid>,
        by_fleetdesk -> Bool,
        synced_at -> Timestamptz,
    }
}

diesel::table! {
    agent_runs (agent_id, run_id) {
        id -> Uuid,
        agent_id -> Uuid,
        run_id -> Text,
        summary -> Nullable<Text>,
        counts -> Jsonb,
        recorded_at -> Timestamptz,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    agents (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        role -> Text,
        created_at -> Timestamptz,
        silent_after_hours -> Int2,
        silent_told_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        kind -> Text,
        lookup -> Text,
        secret_hash -> Bytea,
        agent_id -> Nullable<Uuid>,
        person_id -> Nullable<Uuid>,
        organization_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        last_used_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    community_digest_members (digest_id, external_id) {
        digest_id -> Uuid,
        external_id -> Text,
        display_name -> Nullable<Text>,
        message_count -> Int4,
        summary -> Nullable<Text>,
        tags -> Jsonb,
    }
}

diesel::table! {
    community_digests (id) {
        id -> Uuid,
        space_id -> Uuid,
        day -> Date,
        agent_id -> Uuid,
        members -> Int4,
        skipped -> Int4,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    community_spaces (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        channel -> Text,
        external_id -> Text,
        space_type -> Nullable<Text>,
        market -> Text,
        track -> Nullable<Text>,
        location -> Nullable<Text>,
        language -> Nullable<Text>,
        status -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    community_tickets (id) {
        id -> Uuid,
        space_id -> Uuid,
        member_external_id -> Nullable<Text>,
        category -> Text,
        summary -> Text,
        notes -> Jsonb,
        status -> Text,
        opened_by_agent -> Uuid,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        handled_note -> Nullable<Text>,
        handled_by -> Nullable<Jsonb>,
        handled_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    cron_jobs (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        agent_id -> Uuid,
        job_id -> Text,
        name -> Text,
        schedule -> Text,
        timezone -> Text,
        gateway -> Nullable<Text>,
        enabled -> Bool,
        description -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    cron_runs (id) {
        id -> Uuid,
        job -> Uuid,
        run_id -> Text,
        started_at -> Nullable<Timestamptz>,
        finished_at -> Nullable<Timestamptz>,
        status -> Text,
        summary -> Nullable<Text>,
        log -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    dashboard_sessions (token_hash) {
        token_hash -> Bytea,
        key_id -> Uuid,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    decisions (id) {
        id -> Uuid,
        organization_id -> Uuid,
        workspace_id -> Uuid,
        kind -> Text,
        status -> Text,
        persona_id -> Nullable<Uuid>,
        slot_id -> Nullable<Uuid>,
        generation_id -> Nullable<Uuid>,
        title -> Text,
        question -> Nullable<Text>,
        options -> Jsonb,
        detail -> Jsonb,
        opened_by_agent -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        post_id -> Nullable<Uuid>,
        task_id -> Nullable<Uuid>,
        parent_id -> Nullable<Uuid>,
        opened_by_type -> Text,
        opened_by_person -> Nullable<Text>,
        notes -> Jsonb,
        decided_move -> Nullable<Jsonb>,
        decided_by -> Nullable<Jsonb>,
        decided_at -> Nullable<Timestamptz>,
        result -> Nullable<Text>,
        evidence -> Jsonb,
        handled_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    events (id) {
        id -> Uuid,
        seq -> Nullable<Int8>,
        kind -> Text,
        occurred_at -> Timestamptz,
        workspace_id -> Uuid,
        agent_id -> Nullable<Uuid>,
        object_id -> Uuid,
        data -> Jsonb,
    }
}

diesel::table! {
    idempotency_keys (owner_id, key_hash) {
        owner_id -> Uuid,
        request_hash -> Bytea,
        state -> Text,
        status -> Nullable<Int2>,
        response -> Nullable<Jsonb>,
        created_at -> Timestamptz,
        key_hash -> Bytea,
        instance -> Nullable<Int4>,
    }
}

diesel::table! {
    jobs (id) {
        id -> Uuid,
        kind -> Text,
        key -> Text,
        payload -> Jsonb,
        status -> Text,
        run_at -> Timestamptz,
        attempts -> Int4,
        locked_until -> Nullable<Timestamptz>,
        last_error -> Nullable<Text>,
        created_at -> Timestamptz,
        finished_at -> Nullable<Timestamptz>,
        instance -> Nullable<Int4>,
    }
}

diesel::table! {
    media (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        project_id -> Nullable<Uuid>,
        persona_id -> Nullable<Uuid>,
        character -> Nullable<Text>,
        kind -> Text,
        mime_type -> Text,
        bytes -> Int8,
        width -> Nullable<Int4>,
        height -> Nullable<Int4>,
        duration_ms -> Nullable<Int8>,
        caption -> Nullable<Text>,
        tags -> Array<Text>,
        sha256 -> Text,
        storage_key -> Text,
        parts -> Int4,
        part_bytes -> Int8,
        poster_key -> Nullable<Text>,
        poster_mime -> Nullable<Text>,
        source -> Text,
        created_by_agent -> Nullable<Uuid>,
        archived_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        thumb_key -> Nullable<Text>,
        thumb_mime -> Nullable<Text>,
    }
}

diesel::table! {
    members (id) {
        id -> Uuid,
        organization_id -> Uuid,
        person_id -> Uuid,
        role -> Text,
        review -> Bool,
        left_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    organizations (id) {
        id -> Uuid,
        name -> Text,
        monthly_credit_limit -> Int8,
        created_at -> Timestamptz,
        wiki_review -> Text,
        suspended -> Bool,
        price_product_brief -> Int8,
        price_topic_keyword -> Int8,
        next_pick -> Int8,
        wiki_aliases -> Array<Nullable<Text>>,
        wiki_alias_terms -> Array<Nullable<Text>>,
    }
}

diesel::table! {
    people (id) {
        id -> Uuid,
        email -> Text,
        name -> Text,
        platform_admin -> Bool,
        setup_complete -> Bool,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    persona_cast (persona_id, code) {
        persona_id -> Uuid,
        code -> Text,
        name -> Text,
        summary -> Nullable<Text>,
    }
}

diesel::table! {
    persona_facts (id) {
        id -> Uuid,
        persona_id -> Uuid,
        category -> Text,
        label -> Text,
        value -> Text,
        created_at -> Timestamptz,
        status -> Text,
        detail -> Nullable<Text>,
        post_id -> Nullable<Uuid>,
        proposed_by_agent -> Nullable<Uuid>,
        decision_id -> Nullable<Uuid>,
        decided_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    persona_images (id) {
        id -> Uuid,
        persona_id -> Uuid,
        sha256 -> Text,
        mime_type -> Text,
        bytes -> Int8,
        width -> Int4,
        height -> Int4,
        storage_key -> Text,
        thumb_key -> Text,
        thumb_mime -> Text,
        category -> Text,
        caption -> Nullable<Text>,
        prompt -> Nullable<Text>,
        character -> Nullable<Text>,
        lock -> Text,
        decision_id -> Nullable<Uuid>,
        uploaded_by_agent -> Nullable<Uuid>,
        decided_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    personas (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        project_id -> Uuid,
        agent_id -> Nullable<Uuid>,
        name -> Text,
        track -> Nullable<Text>,
        background -> Nullable<Text>,
        bio -> Nullable<Text>,
        voice -> Nullable<Text>,
        created_at -> Timestamptz,
        status -> Text,
        speech_rules -> Array<Text>,
        forbidden -> Array<Text>,
        created_by_agent -> Nullable<Uuid>,
        retired_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    post_media (post_id, media_id) {
        post_id -> Uuid,
        media_id -> Uuid,
        position -> Int4,
    }
}

diesel::table! {
    post_metrics (post_id, captured_at) {
        post_id -> Uuid,
        captured_at -> Timestamptz,
        views -> Nullable<Int8>,
        likes -> Nullable<Int8>,
        replies -> Nullable<Int8>,
        reposts -> Nullable<Int8>,
        shares -> Nullable<Int8>,
        agent_id -> Nullable<Uuid>,
        recorded_at -> Timestamptz,
    }
}

diesel::table! {
    post_reports (id) {
        id -> Uuid,
        agent_id -> Uuid,
        workspace_id -> Uuid,
        received_at -> Timestamptz,
        inserted -> Int4,
        updated -> Int4,
        unchanged -> Int4,
        ignored -> Int4,
        rejected -> Int4,
    }
}

diesel::table! {
    posts (id) {
        id -> Uuid,
        organization_id -> Uuid,
        workspace_id -> Uuid,
        project_id -> Uuid,
        persona_id -> Uuid,
        slot_id -> Uuid,
        generation_id -> Nullable<Uuid>,
        agent_id -> Nullable<Uuid>,
        status -> Text,
        body -> Text,
        topic -> Nullable<Text>,
        sponsored -> Bool,
        planned_at -> Nullable<Timestamptz>,
        characters -> Jsonb,
        awaiting_rewrite -> Bool,
        rewrite_answered -> Bool,
        returned_body -> Nullable<Text>,
        returned_at -> Nullable<Timestamptz>,
        stocked_at -> Nullable<Timestamptz>,
        stock_reason -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        platform -> Text,
        body_key -> Nullable<Text>,
        scheduled_for -> Nullable<Timestamptz>,
        published_at -> Nullable<Timestamptz>,
        platform_post_id -> Nullable<Text>,
        permalink -> Nullable<Text>,
        from_status -> Nullable<Text>,
        planned_was -> Nullable<Timestamptz>,
        unschedule_pending -> Bool,
        discarded_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use super::sql_types::Tsvector;

    products (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        on_sale -> Bool,
        created_at -> Timestamptz,
        summary -> Nullable<Text>,
        price -> Nullable<Text>,
        url -> Nullable<Text>,
        terms -> Text,
        search -> Nullable<Tsvector>,
    }
}

diesel::table! {
    projects (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    rate_grants (key_id) {
        key_id -> Uuid,
        second -> Int8,
        counts -> Array<Nullable<Int8>>,
        version -> Int8,
    }
}

diesel::table! {
    reports (id) {
        id -> Uuid,
        organization_id -> Uuid,
        workspace_id -> Uuid,
        title -> Text,
        period_from -> Date,
        period_to -> Date,
        weekly -> Bool,
        body -> Jsonb,
        created_by -> Text,
        issued_at -> Nullable<Timestamptz>,
        issued_by -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    review_events (id) {
        id -> Int8,
        post_id -> Uuid,
        action -> Text,
        reason -> Nullable<Text>,
        actor_kind -> Text,
        actor_id -> Nullable<Uuid>,
        actor_name -> Text,
        detail -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    service_secrets (name) {
        name -> Text,
        value -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    task_cards (id) {
        id -> Uuid,
        organization_id -> Uuid,
        workspace_id -> Uuid,
        persona_id -> Nullable<Uuid>,
        kind -> Text,
        title -> Text,
        detail -> Nullable<Text>,
        status -> Text,
        target_type -> Text,
        target_code -> Nullable<Text>,
        target_id -> Nullable<Uuid>,
        assignee_agent -> Nullable<Uuid>,
        opened_by_type -> Text,
        opened_by_name -> Text,
        also_wanted_by -> Array<Text>,
        decision_id -> Nullable<Uuid>,
        due_at -> Nullable<Timestamptz>,
        notes -> Jsonb,
        result -> Nullable<Text>,
        evidence -> Jsonb,
        last_progress_at -> Nullable<Timestamptz>,
        confirmation_since -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        finished_at -> Nullable<Timestamptz>,
        opened_by_agent -> Nullable<Uuid>,
        origin -> Nullable<Jsonb>,
        fail_reason -> Nullable<Text>,
    }
}

diesel::table! {
    uploads (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        agent_id -> Uuid,
        slot_id -> Uuid,
        project_id -> Nullable<Uuid>,
        persona_id -> Uuid,
        character -> Nullable<Text>,
        caption -> Nullable<Text>,
        tags -> Array<Text>,
        mode -> Text,
        mime_type -> Nullable<Text>,
        declared_bytes -> Nullable<Int8>,
        chunks -> Nullable<Int4>,
        token_hash -> Bytea,
        expires_at -> Timestamptz,
        next_chunk -> Int4,
        received_bytes -> Int8,
        hash_state -> Nullable<Bytea>,
        detected_mime -> Nullable<Text>,
        poster_key -> Nullable<Text>,
        poster_mime -> Nullable<Text>,
        media_id -> Nullable<Uuid>,
        completed_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_attempts (id) {
        id -> Int8,
        delivery_id -> Uuid,
        at -> Timestamptz,
        status_code -> Nullable<Int4>,
        error -> Nullable<Text>,
        latency_ms -> Int4,
        body_excerpt -> Text,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Uuid,
        endpoint_id -> Uuid,
        event_id -> Uuid,
        seq -> Int8,
        object_id -> Uuid,
        status -> Text,
        attempts -> Int4,
        next_at -> Timestamptz,
        locked_until -> Nullable<Timestamptz>,
        instance -> Nullable<Int4>,
        last_status -> Nullable<Int4>,
        last_error -> Nullable<Text>,
        last_latency_ms -> Nullable<Int4>,
        created_at -> Timestamptz,
        delivered_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    webhook_dispatch (id) {
        id -> Bool,
        last_seq -> Int8,
    }
}

diesel::table! {
    webhook_endpoints (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        url -> Text,
        description -> Nullable<Text>,
        types -> Array<Text>,
        enabled -> Bool,
        disabled_reason -> Nullable<Text>,
        secret -> Text,
        previous_secret -> Nullable<Text>,
        previous_until -> Nullable<Timestamptz>,
        failing_since -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use super::sql_types::Tsvector;

    wiki_entries (id) {
        id -> Uuid,
        organization_id -> Uuid,
        project_id -> Nullable<Uuid>,
        title_key -> Text,
        title -> Text,
        category -> Text,
        summary -> Text,
        body -> Text,
        tags -> Array<Nullable<Text>>,
        folded_tags -> Array<Nullable<Text>>,
        sources -> Jsonb,
        version -> Int4,
        status -> Text,
        terms_title -> Text,
        terms_summary -> Text,
        terms_body -> Text,
        created_by_agent -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        terms_pivot -> Text,
        terms_version -> Int2,
        aliases -> Array<Nullable<Text>>,
        alias_terms -> Array<Nullable<Text>>,
        search -> Nullable<Tsvector>,
        embedding -> Nullable<Bytea>,
        embedded_version -> Nullable<Int4>,
        embedding_model -> Nullable<Text>,
    }
}

diesel::table! {
    wiki_sources (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        kind -> Text,
        name -> Text,
        locator -> Text,
        every_hours -> Int4,
        created_at -> Timestamptz,
        project_id -> Nullable<Uuid>,
        agent_id -> Nullable<Uuid>,
        scope_note -> Nullable<Text>,
        last_run_at -> Nullable<Timestamptz>,
        last_status -> Nullable<Text>,
        cursor -> Nullable<Text>,
    }
}

diesel::table! {
    wiki_sync_runs (id) {
        id -> Uuid,
        source_id -> Uuid,
        agent_id -> Uuid,
        status -> Text,
        summary -> Nullable<Text>,
        read -> Int4,
        created -> Int4,
        revised -> Int4,
        unchanged -> Int4,
        skipped -> Int4,
        cursor -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    wiki_versions (id) {
        id -> Uuid,
        entry_id -> Uuid,
        version -> Int4,
        category -> Text,
        title -> Text,
        summary -> Text,
        body -> Text,
        tags -> Array<Nullable<Text>>,
        sources -> Jsonb,
        note -> Nullable<Text>,
        status -> Text,
        proposed_by_agent -> Nullable<Uuid>,
        decision_id -> Nullable<Uuid>,
        decided_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    workspaces (id) {
        id -> Uuid,
        organization_id -> Uuid,
        name -> Text,
        client_review -> Bool,
        ads_enabled -> Bool,
        archived_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        accounts_revision -> Int8,
        tasks_revision -> Int8,
        marketplace -> Text,
        monthly_ad_cap -> Nullable<Numeric>,
        ad_cap_currency -> Nullable<Text>,
    }
}

diesel::joinable!(account_generations -> account_slots (slot_id));
diesel::joinable!(account_metrics -> account_slots (slot_id));
diesel::joinable!(account_metrics -> agents (agent_id));
diesel::joinable!(account_slots -> organizations (organization_id));
diesel::joinable!(account_slots -> personas (persona_id));
diesel::joinable!(account_slots -> workspaces (workspace_id));
diesel::joinable!(account_state_changes -> account_generations (generation_id));
diesel::joinable!(account_state_changes -> agents (agent_id));
diesel::joinable!(ad_accounts -> workspaces (workspace_id));
diesel::joinable!(ad_campaigns -> workspaces (workspace_id));
diesel::joinable!(ad_credit_ledger -> ad_research (research_id));
diesel::joinable!(ad_credit_ledger -> organizations (organization_id));
diesel::joinable!(ad_picks -> account_slots (slot_id));
diesel::joinable!(ad_picks -> organizations (organization_id));
diesel::joinable!(ad_picks -> posts (post_id));
diesel::joinable!(ad_picks -> workspaces (workspace_id));
diesel::joinable!(ad_proposals -> agents (agent_id));
diesel::joinable!(ad_proposals -> decisions (decision_id));
diesel::joinable!(ad_proposals -> organizations (organization_id));
diesel::joinable!(ad_proposals -> posts (post_id));
diesel::joinable!(ad_proposals -> workspaces (workspace_id));
diesel::joinable!(ad_research -> agents (agent_id));
diesel::joinable!(ad_research -> organizations (organization_id));
diesel::joinable!(ad_research -> workspaces (workspace_id));
diesel::joinable!(ad_research_items -> ad_research (research_id));
diesel::joinable!(ad_research_items -> organizations (organization_id));
diesel::joinable!(ads -> posts (post_id));
diesel::joinable!(ads -> workspaces (workspace_id));
diesel::joinable!(agents -> workspaces (workspace_id));
diesel::joinable!(api_keys -> agents (agent_id));
diesel::joinable!(api_keys -> organizations (organization_id));
diesel::joinable!(api_keys -> people (person_id));
diesel::joinable!(community_digest_members -> community_digests (digest_id));
diesel::joinable!(community_digests -> agents (agent_id));
diesel::joinable!(community_digests -> community_spaces (space_id));
diesel::joinable!(community_spaces -> workspaces (workspace_id));
diesel::joinable!(community_tickets -> agents (opened_by_agent));
diesel::joinable!(community_tickets -> community_spaces (space_id));
diesel::joinable!(cron_jobs -> agents (agent_id));
diesel::joinable!(cron_jobs -> workspaces (workspace_id));
diesel::joinable!(cron_runs -> cron_jobs (job));
diesel::joinable!(dashboard_sessions -> api_keys (key_id));
diesel::joinable!(decisions -> account_generations (generation_id));
diesel::joinable!(decisions -> account_slots (slot_id));
diesel::joinable!(decisions -> agents (opened_by_agent));
diesel::joinable!(decisions -> organizations (organization_id));
diesel::joinable!(decisions -> personas (persona_id));
diesel::joinable!(decisions -> posts (post_id));
diesel::joinable!(decisions -> workspaces (workspace_id));
diesel::joinable!(events -> workspaces (workspace_id));
diesel::joinable!(media -> agents (created_by_agent));
diesel::joinable!(media -> personas (persona_id));
diesel::joinable!(media -> projects (project_id));
diesel::joinable!(media -> workspaces (workspace_id));
diesel::joinable!(members -> organizations (organization_id));
diesel::joinable!(members -> people (person_id));
diesel::joinable!(persona_cast -> personas (persona_id));
diesel::joinable!(persona_facts -> agents (proposed_by_agent));
diesel::joinable!(persona_facts -> decisions (decision_id));
diesel::joinable!(persona_facts -> personas (persona_id));
diesel::joinable!(persona_facts -> posts (post_id));
diesel::joinable!(persona_images -> agents (uploaded_by_agent));
diesel::joinable!(persona_images -> decisions (decision_id));
diesel::joinable!(persona_images -> personas (persona_id));
diesel::joinable!(personas -> projects (project_id));
diesel::joinable!(personas -> workspaces (workspace_id));
diesel::joinable!(post_media -> media (media_id));
diesel::joinable!(post_media -> posts (post_id));
diesel::joinable!(post_metrics -> agents (agent_id));
diesel::joinable!(post_metrics -> posts (post_id));
diesel::joinable!(post_reports -> agents (agent_id));
diesel::joinable!(post_reports -> workspaces (workspace_id));
diesel::joinable!(posts -> account_generations (generation_id));
diesel::joinable!(posts -> account_slots (slot_id));
diesel::joinable!(posts -> agents (agent_id));
diesel::joinable!(posts -> organizations (organization_id));
diesel::joinable!(posts -> personas (persona_id));
diesel::joinable!(posts -> projects (project_id));
diesel::joinable!(posts -> workspaces (workspace_id));
diesel::joinable!(products -> workspaces (workspace_id));
diesel::joinable!(projects -> workspaces (workspace_id));
diesel::joinable!(rate_grants -> api_keys (key_id));
diesel::joinable!(reports -> organizations (organization_id));
diesel::joinable!(reports -> workspaces (workspace_id));
diesel::joinable!(review_events -> posts (post_id));
diesel::joinable!(task_cards -> organizations (organization_id));
diesel::joinable!(task_cards -> personas (persona_id));
diesel::joinable!(task_cards -> workspaces (workspace_id));
diesel::joinable!(uploads -> account_slots (slot_id));
diesel::joinable!(uploads -> agents (agent_id));
diesel::joinable!(uploads -> media (media_id));
diesel::joinable!(uploads -> personas (persona_id));
diesel::joinable!(uploads -> projects (project_id));
diesel::joinable!(uploads -> workspaces (workspace_id));
diesel::joinable!(webhook_attempts -> webhook_deliveries (delivery_id));
diesel::joinable!(webhook_deliveries -> events (event_id));
diesel::joinable!(webhook_deliveries -> webhook_endpoints (endpoint_id));
diesel::joinable!(webhook_endpoints -> workspaces (workspace_id));
diesel::joinable!(wiki_entries -> agents (created_by_agent));
diesel::joinable!(wiki_entries -> organizations (organization_id));
diesel::joinable!(wiki_entries -> projects (project_id));
diesel::joinable!(wiki_sources -> agents (agent_id));
diesel::joinable!(wiki_sources -> projects (project_id));
diesel::joinable!(wiki_sources -> workspaces (workspace_id));
diesel::joinable!(wiki_sync_runs -> agents (agent_id));
diesel::joinable!(wiki_sync_runs -> wiki_sources (source_id));
diesel::joinable!(wiki_versions -> agents (proposed_by_agent));
diesel::joinable!(wiki_versions -> decisions (decision_id));
diesel::joinable!(wiki_versions -> wiki_entries (entry_id));
diesel::joinable!(workspaces -> organizations (organization_id));

diesel::allow_tables_to_appear_in_same_query!(
    account_generations,
    account_metrics,
    account_slots,
    account_state_changes,
    ad_accounts,
    ad_campaign_days,
    ad_campaigns,
    ad_credit_ledger,
    ad_picks,
    ad_proposals,
    ad_research,
    ad_research_items,
    ad_research_quota,
    ads,
    agent_runs,
    agents,
    api_keys,
    community_digest_members,
    community_digests,
    community_spaces,
    community_tickets,
    cron_jobs,
    cron_runs,
    dashboard_sessions,
    decisions,
    events,
    idempotency_keys,
    jobs,
    media,
    members,
    organizations,
    people,
    persona_cast,
    persona_facts,
    persona_images,
    personas,
    post_media,
    post_metrics,
    post_reports,
    posts,
    products,
    projects,
    rate_grants,
    reports,
    review_events,
    service_secrets,
    task_cards,
    uploads,
    webhook_attempts,
    webhook_deliveries,
    webhook_dispatch,
    webhook_endpoints,
    wiki_entries,
    wiki_sources,
    wiki_sync_runs,
    wiki_versions,
    workspaces,
);
