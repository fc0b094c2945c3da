"""The Claude Code sessions of the second eval corpus (Ines Duarte's projects).

Each session: (project folder, git branch, start time, domain, subtopic, [(user, assistant), ...]).
``build.py`` writes them in Claude Code's layout under ``transcripts/``.
"""

SESSIONS = [
    ("/home/ines/src/ferrypass", "nfc-retry", "2026-01-09T09:12:00", "ferrypass", "fp-nfc", [
        ("the card read fails half the time on my galaxy A12 with TagLostException. can you look at CardReader.kt",
         "The read does three transceive calls and the A12's NFC field is weak, so any wobble loses the tag between the second and third APDU. I made the reader retry the whole IsoDep session once on TagLostException and raised the timeout to 1500 ms with isoDep.timeout. Partial results (contracts read before the loss) are kept and shown with a 'hold the card still' hint."),
        ("also sometimes the android 'new tag' sheet pops up instead of our screen",
         "That is the system NDEF dispatch winning the race. In enableReaderMode I added FLAG_READER_SKIP_NDEF_CHECK and FLAG_READER_NO_PLATFORM_SOUNDS; with reader mode active in onResume the foreground activity always gets the tag first."),
        ("write a test for the retry",
         "Added CardReaderRetryTest with a fake IsoDep that throws TagLostException on the third transceive the first time. It asserts two sessions were opened and the balance from the second read is returned."),
    ]),
    ("/home/ines/src/ferrypass", "main", "2026-01-20T18:40:00", "ferrypass", "fp-nfc", [
        ("monthly passes show as expired one day before they really end. users are complaining at the ferry gates",
         "The contract end date is stored as days since 1997-01-01. ContractParser converts it with LocalDate plus days and then to an Instant at UTC midnight, and the UI compares that with now in Lisbon. From late October to March that is the same, but in summer Lisbon is UTC+1 so the pass looked expired an hour before midnight, and the display rounded to the day before. I changed the comparison to use LocalDate in Europe/Lisbon everywhere."),
        ("add a regression test with a summer date",
         "ContractDatesTest now checks a pass ending 2026-07-31 at 23:30 Lisbon time is still valid, and one ending 2026-01-31 too."),
    ]),
    ("/home/ines/src/ferrypass", "release-2.5.1", "2026-02-18T21:05:00", "ferrypass", "fp-release", [
        ("the 2.5.0 rollout has a crash spike in play console vitals, all android 8. NoSuchMethodError java.time.Duration.toSeconds",
         "Android 8 (API 26/27) ships an older java.time without Duration.toSeconds, and minSdk is 26. The fix is core library desugaring: coreLibraryDesugaringEnabled = true in compileOptions and the desugar_jdk_libs dependency. I would halt the staged rollout at 20% now and ship 2.5.1 with the fix to the internal track first."),
        ("ok halted. prepare 2.5.1",
         "Bumped the version to 2.5.1 (version code 20501 from the tag), enabled desugaring, and added a line to the Portuguese and English release notes. The pre-launch report on the internal track includes an API 26 device, so the crash would show there before production."),
    ]),
    ("/home/ines/src/ferrypass", "compose-board", "2026-02-11T10:30:00", "ferrypass", "fp-compose", [
        ("the departure board janks when scrolling and the layout inspector shows it recomposing constantly",
         "DepartureBoard reads clock.now() as a mutableStateOf updated every second, so every row recomposes every second. I moved the countdown to derivedStateOf keyed on the minute, so rows recompose once a minute, and gave the LazyColumn items stable keys of route id plus scheduled time."),
        ("and remove the last xml layout, the settings screen",
         "SettingsActivity is now a Compose screen using PreferenceScreen-style composables I wrote (SwitchRow, ListRow). activity_settings.xml and its styles are deleted; the Paparazzi snapshot for settings was regenerated."),
    ]),
    ("/home/ines/src/ferrypass", "offline", "2025-12-15T08:20:00", "ferrypass", "fp-offline", [
        ("the board takes 3 seconds to open since the last update. only on devices that upgraded",
         "Room migration 7 to 8 recreated the stop_times table to add a column and did not recreate the index on (stop_id, departure_time), so every query scans 200k rows. Fresh installs get the index from the entity definition, which is why only upgraded devices are slow. Migration 9 creates the index again."),
        ("can we make the database smaller too",
         "The GTFS import now keeps only trips whose service is active today or tomorrow, and the WorkManager job refreshes every 12 hours. On my Pixel the database went from 30 MB to 2 MB."),
    ]),
    ("/home/ines/src/tidewatch", "main", "2026-01-08T14:00:00", "tidewatch", "tw-calibration", [
        ("buoy-09 pressure is off by about 4cm since the divers replaced the cable. how do we correct the readings",
         "Calibration offsets are per sensor serial with a valid-from time, and the 10-minute aggregates are recomputed from raw data. I added an offset of -0.04 m for the buoy-09 pressure sensor valid from 2026-01-08 09:00 and refreshed the continuous aggregate for the affected window."),
        ("how would we notice this kind of thing automatically next time",
         "drift.go compares each buoy with its two nearest neighbours using a 48-hour rolling median of the residual. A residual that grows steadily for a week creates a 'check calibration' card through the Trello API rather than an alert, because drift is slow and not urgent."),
    ]),
    ("/home/ines/src/tidewatch", "alerts-cooldown", "2025-11-03T22:45:00", "tidewatch", "tw-alerts", [
        ("I got paged 14 times last night because buoy-05 keeps going silent and coming back",
         "The silence rule fired on every evaluation and resolved on the next message. I changed the evaluator so an alert needs two consecutive failing evaluations, and added a 30-minute cooldown per buoy and rule. Storm-surge alerts keep no cooldown."),
        ("helena wants a morning summary instead of individual alerts for non-urgent stuff",
         "Added a daily digest at 07:00 Europe/Lisbon to Professor Matos with the previous day's alerts grouped per buoy; only storm surge still goes to Pushover immediately."),
    ]),
    ("/home/ines/src/tidewatch", "ingest-backpressure", "2025-10-21T11:15:00", "tidewatch", "tw-ingest", [
        ("memory of the tidewatch process grows until it is OOM killed every few days",
         "Each buoy had its own goroutine with an unbounded slice as a buffer; when buoy-03 flapped it reconnected and leaked its old goroutine. I replaced them with one MQTT consumer and a bounded channel of 10,000 readings feeding the batch writer. With QoS 1 and a persistent session the broker holds the backlog if we fall behind."),
        ("we also saw duplicate rows",
         "QoS 1 redelivers after reconnect. The insert now uses ON CONFLICT (buoy_id, measured_at) DO NOTHING and there is a unique index on those columns."),
    ]),
    ("/home/ines/src/tidewatch", "retention", "2026-03-05T16:00:00", "tidewatch", "tw-storage", [
        ("the lab wants to keep all raw readings forever now. what does that cost us",
         "Compressed chunks are about 8% of raw size; a year of raw readings from twelve buoys is about 9 GB compressed. I removed the two-year retention policy and added a tiering policy that moves chunks older than a year to the cheaper volume."),
    ]),
    ("/home/ines/src/lindqvist-infra", "nat-endpoints", "2025-11-12T09:30:00", "freight", "lf-costs", [
        ("cost explorer says NAT gateway processing is 2100 a month. where does it come from",
         "VPC flow logs show most NAT bytes go to S3 (the tracking-worker's parquet uploads) and DynamoDB. Gateway endpoints for S3 and DynamoDB are free and keep that traffic off the NAT. I added both to modules/network and attached them to the private route tables; expect about 1,500 USD less per month."),
        ("anything else obvious",
         "Twelve unattached EBS volumes and 140 manual RDS snapshots older than 90 days. I wrote a small Lambda that reports them weekly to Slack rather than deleting them, since Erik wants a human to decide."),
    ]),
    ("/home/ines/src/lindqvist-infra", "opentofu", "2026-02-02T13:00:00", "freight", "lf-terraform", [
        ("legal says we cannot use terraform 1.6+ because of the BSL. how hard is moving to opentofu",
         "OpenTofu 1.9 reads Terraform 1.6 state as is. I changed the required_version constraints, switched the Atlantis image to the OpenTofu one and regenerated .terraform.lock.hcl for linux_amd64 and darwin_arm64. Plans for dev, staging and prod show no changes."),
        ("and the state locking still works?",
         "Yes, the S3 backend with the DynamoDB lock table is unchanged; I tested by running a plan from Atlantis while holding a lock from a second plan, and it waited."),
    ]),
    ("/home/ines/src/lindqvist-infra", "health-check", "2025-12-04T10:10:00", "freight", "lf-ecs", [
        ("every booking-api deploy during the rds maintenance window rolled back. circuit breaker triggered",
         "The ALB target group checks /actuator/health, which includes the database indicator, so during RDS maintenance new tasks never became healthy and the circuit breaker rolled back. The target group now uses /actuator/health/liveness; readiness still checks the database inside the app."),
        ("monday mornings the service is slow too",
         "CPU target tracking at 60% reacts after the spike starts. I added a scheduled action scaling booking-api to 6 tasks at 06:45 on Mondays and back to 3 at 10:00."),
    ]),
    ("/home/ines/src/lindqvist-infra", "sso", "2026-01-15T15:20:00", "freight", "lf-iam", [
        ("rotate the sftp-customs user key, the 90 days are up",
         "Created a new access key for sftp-customs, sent it to the customs broker through the shared 1Password vault, and after their first successful upload deactivated the old key. The user's policy still only allows PutObject on manifests/incoming/."),
        ("can we get rid of that iam user entirely",
         "Transfer Family supports service-managed SSH keys, so the broker could use an SFTP key instead of AWS credentials. That needs the broker to change their client, so I wrote it up for Erik's Tuesday meeting."),
    ]),
    ("/home/ines/src/cragbook", "double-booking", "2026-01-27T19:00:00", "cragbook", "cb-liveview", [
        ("members on phones manage to book the same slot twice",
         "A double tap sends two phx-click events before the first reply. The button now has phx-disable-with, and Bookings.create_booking runs in a transaction that checks for an existing booking of the member in that slot; the exclusion constraint in the database is the final guard."),
        ("the slot list update is slow when many people are on the page",
         "Every booking broadcast re-rendered the whole slot list assign, about 40 KB per diff. With LiveView streams only the changed slot is sent, under 1 KB."),
    ]),
    ("/home/ines/src/cragbook", "reminders", "2026-02-09T08:45:00", "cragbook", "cb-email", [
        ("people got two reminder emails for the same booking after yesterday's deploy",
         "Both the old and the new machine ran the Oban cron during the rolling deploy. The reminder worker is now unique per booking for 300 seconds (unique: [period: 300, keys: [:booking_id]]), so a duplicate insert is dropped."),
        ("the email looks broken in outlook",
         "Outlook's Word renderer ignores CSS grid. The HEEx email components now use nested tables for layout and inline styles; I checked it in Postmark's preview for Outlook 2019."),
    ]),
    ("/home/ines/src/cragbook", "add-column", "2025-12-06T20:30:00", "cragbook", "cb-ecto", [
        ("friday evening the app froze for 20 seconds during deploy",
         "The migration added a NOT NULL column with a default computed by a function to bookings, which rewrote the table under an exclusive lock while members were booking. I split it into three migrations: add the column nullable, backfill in batches, then add the constraint as NOT VALID and validate it."),
    ]),
    ("/home/ines/src/cragbook", "mbway", "2026-03-10T11:00:00", "cragbook", "cb-payments", [
        ("add MB WAY to the membership checkout",
         "Stripe supports MB WAY as a payment method for Portuguese customers. I enabled it in the Checkout session's payment_method_types for subscriptions and added the mb_way webhook events to the handler; events are deduplicated by id in the Oban job."),
        ("and the refund rule for late cancellations?",
         "Cancellations more than 24 hours before the slot get an automatic Stripe refund; later ones create a gym credit entry on the member instead."),
    ]),
    ("/home/ines/dotfiles", "main", "2026-03-14T22:00:00", "dotfiles", "nv-lsp", [
        ("move my neovim lsp setup off nvim-lspconfig to the new vim.lsp.config",
         "Each server now has a file under lsp/ (gopls.lua, lua_ls.lua, terraformls.lua...) returning its config, and init.lua calls vim.lsp.enable with the list. nvim-lspconfig is removed from the lazy spec."),
        ("elixir-ls uses 3GB of ram on cragbook",
         "That is dialyzer building its PLT. I set dialyzerEnabled = false for elixir-ls; dialyzer keeps running in CI. Later you could try Expert, the new official Elixir language server."),
    ]),
    ("/home/ines/dotfiles", "flake-pin", "2026-01-05T17:30:00", "dotfiles", "nv-nix", [
        ("after nix flake update kotlin-language-server fails to start on the macbook",
         "The nixpkgs-unstable bump brought a kotlin-language-server built against a newer JDK than the one in your home-manager profile on darwin. I pinned the nixpkgs input to the release branch and added a fortnightly update reminder; both hosts build again."),
    ]),
    ("/home/ines/src/home-assistant-config", "main", "2025-12-20T12:00:00", "homeauto", "ha-automations", [
        ("the bathroom fan automation is going crazy, turning on and off every second",
         "The automation turns the fan on when humidity is above 70% and off when below, but the fan's own state change retriggered it. I set mode: single, added a condition that the fan state has not changed in the last 60 seconds, and a 2% hysteresis."),
        ("preheat the flat only when it is cold outside",
         "The heating automation now reads the forecast from the met.no integration and preheats at 06:30 only when the forecast low is below 10 °C."),
    ]),
    ("/home/ines/src/home-assistant-config", "zigbee-channel", "2025-10-05T10:00:00", "homeauto", "ha-zigbee", [
        ("aqara door sensors keep disconnecting from zigbee2mqtt",
         "They are end devices and need a router nearby; the closest Tradfri bulb is three rooms away. Also Zigbee channel 11 overlaps your Wi-Fi on channel 1. Moving Zigbee to channel 25 means re-pairing all devices, so I would do that and add a Tradfri repeater in the corridor."),
    ]),
    ("/home/ines/notes", "main", "2026-01-12T08:00:00", "coffee", "coffee-espresso", [
        ("my espresso shots with the new light roast taste sour and run too fast",
         "Sour and fast means under-extracted. With a light roast grind finer (try two steps on the DF64), raise the temperature to 95 °C and the ratio to about 1:2.5, and use a longer low-flow pre-infusion with the Bianca's paddle so the puck saturates evenly."),
    ]),
    ("/home/ines/notes", "main", "2026-02-25T21:00:00", "renovation", "reno-contractors", [
        ("make me a table comparing the three builder quotes for the flat",
         "Vasco & Filhos 38,500 EUR, 14 weeks, four milestone payments with 10% retention; Obras Ribeiro 44,000 EUR, 12 weeks, 30% up front; LisboaReno 51,200 EUR, 10 weeks, includes the kitchen carpentry. Vasco is cheapest and the only one with retention until the snag list is closed."),
    ]),
    ("/home/ines/src/anki-tools", "main", "2026-02-03T07:30:00", "japanese", "jp-anki", [
        ("write a script that adds sentence cards from my terrace house subtitle file through ankiconnect",
         "mine.py reads the .srt, keeps lines with at least one word not yet in your vocabulary deck, and calls AnkiConnect's addNotes with the sentence, the target word and its reading from the Yomitan dictionary export. Cards go to the 'Mining' deck with the tag terrace-house."),
    ]),
]
