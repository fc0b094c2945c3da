"""The longterm memory of the second eval corpus: Ines Duarte's knowledge graph.

Written by hand, independently of ``tests/data/eval`` (another owner, other areas,
other vocabulary). ``build.py`` turns it into ``memory.jsonl`` and ``labels.jsonl``.
Each entity: (name, entityType, domain, subtopic, [observations]).
"""

ENTITIES = [
    # ---------------------------------------------------------------- ferrypass (Android transit-ticket app)
    ("ferrypass", "Project", "ferrypass", "fp-compose", [
        "ferrypass is Ines's Android app for Lisbon river-ferry commuters: it reads the Viva Viagem card balance and shows the next Transtejo departures.",
        "The UI is written entirely in Jetpack Compose with Material 3; the last XML layout was deleted on 2026-02-11.",
        "ferrypass targets API 34 and keeps minSdk 26 because a third of users ride with old Samsung phones.",
    ]),
    ("DepartureBoard composable", "Component", "ferrypass", "fp-compose", [
        "DepartureBoard recomposed on every clock tick because it read a mutable Instant; wrapping it in derivedStateOf cut recompositions from 60 to 1 per minute.",
        "The departure rows use LazyColumn with stable keys (route id + scheduled time) so the list does not jump when a ferry is cancelled.",
        "Dynamic colour is off for DepartureBoard: the Transtejo orange must stay the brand colour even with Material You wallpapers.",
        "Screenshot tests for DepartureBoard run with Paparazzi in CI and fail on a one-pixel diff of the cancellation badge.",
    ]),
    ("Viva Viagem card reader", "Component", "ferrypass", "fp-nfc", [
        "The Viva Viagem card is a Calypso contactless card; ferrypass reads it through Android's IsoDep and selects the Calypso application by AID before reading the contract file.",
        "Reading the balance needs three APDUs; on Pixel 6 a read takes about 180 ms, on the Galaxy A12 up to 900 ms.",
        "TagLostException happens when the phone moves during the read; the reader now retries once and keeps the partial contract list instead of failing.",
        "Enable reader mode with FLAG_READER_SKIP_NDEF_CHECK, otherwise the system NDEF dispatch races ferrypass for the tag and sometimes wins.",
    ]),
    ("Calypso contract parsing", "Component", "ferrypass", "fp-nfc", [
        "Calypso contract records are bit-packed; ferrypass parses them with a small BitReader class instead of the abandoned calypso-kit library.",
        "Zapping credit (the pay-as-you-go purse) is stored in cents in the counter file, not in the contract records.",
        "2025-12-03: monthly passes were shown as expired one day early because the contract end date is in days since 1997-01-01 and we added the epoch in UTC.",
        "2026-01-20: the end-date bug is fixed by computing contract dates in Europe/Lisbon instead of UTC.",
    ]),
    ("ferrypass Play Console", "Service", "ferrypass", "fp-release", [
        "Releases go to the internal testing track first, then a 20% staged rollout on production for three days before 100%.",
        "The upload key lives in the Gradle Play Publisher credentials; Play App Signing holds the real app signing key since 2024.",
        "Version codes are derived from the git tag: 2.4.1 becomes 20401, so a hotfix tag always sorts after its release.",
        "2026-02-18: release 2.5.0 was halted at 20% after a crash spike on Android 8 devices (NoSuchMethodError in java.time); 2.5.1 added core library desugaring.",
    ]),
    ("ferrypass release checklist", "Document", "ferrypass", "fp-release", [
        "Before each production rollout: bump the version in libs.versions.toml, update the Portuguese and English release notes, and check the pre-launch report for accessibility warnings.",
        "The Data safety form had to be updated when crash reporting moved from Firebase Crashlytics to Sentry in 2025.",
        "Google's target API deadline is every August; ferrypass moves targetSdk in June so there is time for the Play review.",
    ]),
    ("timetable sync", "Component", "ferrypass", "fp-offline", [
        "Timetables are stored in a Room database so the app works underground in the Cais do Sodré station where there is no signal.",
        "A WorkManager periodic job refreshes the GTFS feed every 12 hours with a network-connected and battery-not-low constraint.",
        "The GTFS zip from Transtejo is 4 MB; ferrypass keeps only today's and tomorrow's trips, which shrank the database from 30 MB to 2 MB.",
        "Room migration 7→8 dropped the stop_times index by mistake and the board took 3 s to load; migration 9 recreated it.",
    ]),
    # ---------------------------------------------------------------- tidewatch (Go telemetry service)
    ("tidewatch", "Project", "tidewatch", "tw-ingest", [
        "tidewatch is a Go service that collects water level, temperature and salinity from twelve buoys in the Tagus estuary for the marine-biology lab at FCUL.",
        "Buoys publish over MQTT to a Mosquitto broker on the lab's VPS; tidewatch subscribes with QoS 1 and a persistent session so nothing is lost across restarts.",
        "Each reading is a CBOR payload of 38 bytes; JSON was dropped because the buoys' LTE-M data plan is billed per kilobyte.",
    ]),
    ("Mosquitto broker", "Service", "tidewatch", "tw-ingest", [
        "Mosquitto 2.0 runs with per-buoy usernames and an ACL so buoy-07 can only publish to tw/buoy-07/#.",
        "The broker's bridge config used to forward everything to the university's broker; it now forwards only tw/+/alerts.",
        "Ines's MQTT admin login for the lab broker: MQTT_PASSWORD=Tg7-kelp-Hx29-Dune-a81 (tidewatch-admin).",
        "max_queued_messages was raised to 5000 after buoy-03 came back from a two-day outage and the broker dropped its backlog.",
    ]),
    ("reading pipeline", "Component", "tidewatch", "tw-ingest", [
        "The pipeline decodes CBOR, rejects readings with timestamps more than 10 minutes in the future, then batches 500 rows per insert.",
        "Duplicate readings from QoS 1 redelivery are dropped with an ON CONFLICT DO NOTHING on (buoy_id, measured_at).",
        "A goroutine per buoy was replaced by one consumer with a bounded channel of 10,000 after a memory leak when a buoy flapped.",
    ]),
    ("TimescaleDB", "Service", "tidewatch", "tw-storage", [
        "Readings live in a TimescaleDB hypertable chunked by 7 days; compression kicks in after 30 days and saves about 92%.",
        "A continuous aggregate computes 10-minute means per buoy; the dashboard never reads raw rows older than a day.",
        "2025-10-14: retention is 2 years of raw readings.",
        "2026-03-05: the lab asked to keep raw readings forever for a thesis, so the retention policy was removed and compressed chunks go to cheaper storage instead.",
    ]),
    ("tidewatch backups", "Process", "tidewatch", "tw-storage", [
        "pgBackRest takes a full backup every Sunday and differentials nightly to a Hetzner storage box.",
        "Restoring last month's backup to a scratch VM took 41 minutes; the restore drill is on the first Monday of each quarter.",
        "The storage box URL with its credentials is in the pgBackRest config: sftp://u381223:Brine-Otter-5521@u381223.your-storagebox.de/tidewatch",
    ]),
    ("alert rules", "Component", "tidewatch", "tw-alerts", [
        "An alert fires when a buoy is silent for 45 minutes, when salinity jumps more than 3 PSU in 10 minutes, or when the water level passes the storm-surge threshold.",
        "Alerts go to the lab's Signal group through signal-cli and to Ines by Pushover with priority 1 only for storm surge.",
        "Flapping buoys were paging at night; alerts now need two consecutive failing evaluations and a 30-minute cooldown.",
        "Storm-surge threshold for the Cais do Ginjal buoy is 3.9 m above chart datum, set with the port authority in January.",
    ]),
    ("Professor Helena Matos", "Person", "tidewatch", "tw-alerts", [
        "Professor Helena Matos leads the estuary lab and wants a daily summary e-mail at 07:00 rather than individual alerts.",
        "Helena asked that alerts during field campaigns go to the boat crew's phone as well; the campaign calendar is a shared ICS feed that tidewatch reads.",
    ]),
    ("sensor calibration", "Process", "tidewatch", "tw-calibration", [
        "Conductivity sensors drift with biofouling; divers clean them every six weeks and take a reference sample for the lab's salinometer.",
        "Calibration offsets are stored per sensor serial with a valid-from date, so readings are corrected retroactively when a new offset is entered.",
        "Temperature sensors are checked against a reference thermometer in an ice bath and a 25 °C bath; anything off by more than 0.1 °C is replaced.",
        "Buoy-09's pressure sensor reads 4 cm high after its cable was replaced; the offset is applied from 2026-01-08.",
    ]),
    ("drift detection", "Component", "tidewatch", "tw-calibration", [
        "Drift is detected by comparing each buoy with its two nearest neighbours over a 48-hour rolling median.",
        "A buoy whose residual grows steadily for a week gets a 'check calibration' task in the lab's Trello board instead of an alert.",
    ]),
    # ---------------------------------------------------------------- Lindqvist Freight (AWS consulting)
    ("Lindqvist Freight", "Organization", "freight", "lf-terraform", [
        "Lindqvist Freight is a Gothenburg logistics company; Ines consults two days a week on their AWS platform, billing through her Portuguese freelance activity.",
        "Their main contact is Erik Sandberg, head of platform, who approves every production change in the Tuesday change meeting.",
    ]),
    ("lindqvist-infra repo", "Repository", "freight", "lf-terraform", [
        "All infrastructure is in the lindqvist-infra Terraform repo, one root module per environment (dev, staging, prod) and shared modules under modules/.",
        "Terraform state is in S3 with a DynamoDB lock table, one state file per root module; never run terraform from a laptop against prod, Atlantis applies after review.",
        "Providers are pinned in .terraform.lock.hcl for linux_amd64 and darwin_arm64, because Atlantis and Ines's MacBook hash differently.",
        "A terraform import of the hand-made Route 53 zones took a day; the zones are now in modules/dns with prevent_destroy.",
        "2025-11-20: Terraform 1.6 is the pinned version.",
        "2026-02-02: upgraded to OpenTofu 1.9 after Lindqvist's legal team objected to the BSL licence; the state files migrated without changes.",
    ]),
    ("Atlantis", "Service", "freight", "lf-terraform", [
        "Atlantis runs in the tools account and comments plans on pull requests; a plan older than 24 hours must be re-planned before apply.",
        "Atlantis locks a directory while a PR is open, so two people changing prod at once get a clear lock message instead of a race.",
    ]),
    ("booking-api service", "Service", "freight", "lf-ecs", [
        "booking-api is a Kotlin Spring Boot service on ECS Fargate behind an ALB, 3 tasks in prod with 1 vCPU and 2 GB each.",
        "Deploys use the ECS rolling update with minimumHealthyPercent 100 and the deployment circuit breaker with rollback enabled.",
        "The ALB health check hit /actuator/health, which checked the database and failed every deploy during RDS maintenance; it now checks /actuator/health/liveness.",
        "Task definitions are rendered by Terraform but the image tag is set by the GitHub Actions deploy job, so Terraform ignores container_definitions changes.",
    ]),
    ("ECS capacity", "Topic", "freight", "lf-ecs", [
        "Fargate Spot runs the tracking-worker service with a 3:1 spot to on-demand weight; booking-api stays on on-demand only.",
        "Service auto scaling tracks 60% CPU for booking-api; the Monday 07:00 load spike needed a scheduled scale-out to 6 tasks at 06:45.",
    ]),
    ("AWS IAM Identity Center", "Service", "freight", "lf-iam", [
        "People sign in through IAM Identity Center backed by Lindqvist's Entra ID; nobody has IAM users any more except the legacy SFTP integration.",
        "Ines has the PlatformEngineer permission set in dev and staging and ReadOnly plus break-glass in prod.",
        "The break-glass role requires an MFA'd session and posts to the #platform-alerts Slack channel through an EventBridge rule whenever it is assumed.",
    ]),
    ("legacy SFTP user", "Credential", "freight", "lf-iam", [
        "The customs broker still uploads manifests by SFTP to Transfer Family with an IAM user key; rotation is due every 90 days.",
        "Old access key of the sftp-customs user, deactivated 2026-01-15: AKIAZ7QW3EXAMPLE4XKD with secret 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.",
        "The SFTP user's policy allows s3:PutObject only on the manifests/incoming/ prefix, enforced with an explicit deny on everything else.",
    ]),
    ("AWS cost review", "Process", "freight", "lf-costs", [
        "The monthly AWS bill was 18,400 USD in October 2025; NAT gateway data processing alone was 2,100 USD.",
        "Adding S3 and DynamoDB gateway endpoints moved most NAT traffic off the NAT gateway and saved about 1,500 USD a month.",
        "A one-year Compute Savings Plan of 4 USD/hour covers the steady Fargate and Lambda baseline.",
        "Cost anomaly detection e-mails Erik and Ines when a service's daily spend is 40% above its forecast.",
        "Unattached EBS volumes and old RDS snapshots are reported weekly by a small Lambda that posts to Slack.",
    ]),
    # ---------------------------------------------------------------- cragbook (Phoenix LiveView booking app)
    ("cragbook", "Project", "cragbook", "cb-liveview", [
        "cragbook is the booking app of the Bloc Alcântara climbing gym, built by Ines in Elixir with Phoenix LiveView; members book 90-minute slots because of capacity limits.",
        "It runs on Fly.io in the Amsterdam region with one Postgres instance and two app machines.",
    ]),
    ("slot picker LiveView", "Component", "cragbook", "cb-liveview", [
        "The slot picker is a LiveView that subscribes to a PubSub topic per day, so a slot filling up greys out on every open browser within a second.",
        "Phone users double-booked by tapping twice; the book button now uses phx-disable-with and the context checks for an existing booking in the same transaction.",
        "LiveView streams replaced the assigns list of slots, which cut the diff sent on each update from 40 KB to under 1 KB.",
        "Tests for the slot picker use Phoenix.LiveViewTest and render_click; the flaky one waited on a PubSub broadcast and now asserts with assert_receive.",
    ]),
    ("cragbook schema", "Component", "cragbook", "cb-ecto", [
        "Bookings, members, slots and memberships are Ecto schemas; capacity is enforced by a check constraint plus a Postgres exclusion constraint on member and slot time range.",
        "Ecto migrations run on deploy through a release command in fly.toml, before the new machines start.",
        "A migration that added a NOT NULL column without a default locked the bookings table for 20 seconds on Friday evening; new columns are added nullable and backfilled.",
        "Member e-mails are citext so that Joao@ and joao@ are the same member.",
    ]),
    ("member import", "Process", "cragbook", "cb-ecto", [
        "The 1,400 existing members came from the gym's old Excel sheet; the import script normalised Portuguese phone numbers to E.164.",
        "Duplicate members with the same NIF were merged by hand with the gym's front desk.",
    ]),
    ("cragbook payments", "Component", "cragbook", "cb-payments", [
        "Day passes are paid with Stripe Checkout; monthly memberships use Stripe Billing subscriptions with MB WAY and card.",
        "Stripe webhooks are verified with the endpoint signing secret and processed idempotently by event id in an Oban job.",
        "The live secret key was pasted into a GitHub issue once: STRIPE_SECRET_KEY=sk_live_51NfQeLKx8vTzPq3RmW7yZc2Ab9dE4fGh6JkL0nM5pRsT8uVwXy — rolled the same day.",
        "Refunds for cancelled slots are automatic up to 24 hours before the slot; later cancellations keep the payment as gym credit.",
        "VAT of 23% is included in all prices and invoices are issued through InvoiceXpress, which is certified by the Portuguese tax authority.",
    ]),
    ("cragbook e-mail", "Component", "cragbook", "cb-email", [
        "Booking confirmations and reminders are sent with Swoosh through Postmark, from a verified bloc-alcantara.pt sender domain.",
        "Reminders go out 3 hours before the slot from an Oban cron job; the job was sending twice after a deploy until unique: [period: 300] was added.",
        "Templates are HEEx components rendered to HTML and text; Outlook dropped the CSS grid layout so the e-mail uses tables.",
        "Postmark's bounce webhook marks an e-mail as undeliverable and the member sees a banner asking to fix it at the next login.",
    ]),
    # ---------------------------------------------------------------- climbing (personal)
    ("hangboard routine", "Habit", "climbing", "climb-fingers", [
        "Ines hangs on a Tension Block twice a week: 7 seconds on, 3 off, six reps, on the 20 mm edge with half-crimp.",
        "2025-09-01: max-hang load was bodyweight plus 8 kg.",
        "2026-02-20: max-hang load reached bodyweight plus 14 kg, measured with the Tindeq Progressor.",
        "No hangboarding within 48 hours of a hard bouldering session; fingers need the rest more than the muscles.",
    ]),
    ("A2 pulley injury", "Health", "climbing", "climb-injury", [
        "Ines strained the A2 pulley of her left ring finger on a crimpy boulder in Sintra on 2025-06-14.",
        "The physio, Dr. Rui Fonseca, prescribed isometric finger rolls and no full crimp for eight weeks.",
        "H-taping helped on return to climbing but she stopped taping after three months on the physio's advice.",
        "Warm-up rule since the injury: 15 minutes of easy climbing and progressive hangs before any crimp.",
    ]),
    ("climbing trips", "Topic", "climbing", "climb-trips", [
        "Fontainebleau in October 2025: stayed at the Milly-la-Forêt gîte, climbed at Bas Cuvier and Roche aux Sabots, best tick was Marie-Rose (6A).",
        "Albarracín is planned for Easter 2026 with Marta and Tiago; the crash pads go in Tiago's van, permits are not needed for bouldering in the Pinares area.",
        "Rain at Font: the sandstone is fragile when wet, so rest days go to the Fontainebleau castle instead.",
    ]),
    ("outdoor projects", "Topic", "climbing", "climb-projects", [
        "Current outdoor project: 'O Guardião' (7A) at Cabo da Roca; the crux is a left-hand gaston to a sloper.",
        "Sintra boulders are best from November to March; summer fog makes the granite greasy.",
        "Ines keeps her ticks on 27 Crags and a private spreadsheet with attempts per session.",
    ]),
    # ---------------------------------------------------------------- coffee (personal)
    ("Lelit Bianca", "Equipment", "coffee", "coffee-espresso", [
        "The espresso machine is a Lelit Bianca V3 with the flow-control paddle; it is plumbed into the kitchen water filter.",
        "Standard recipe: 18 g in, 40 g out in 30 seconds at 93 °C, with a 6-second pre-infusion at low flow.",
        "Light roasts get a longer ratio (1:2.5) and 95 °C; the paddle ramps up slowly to avoid channeling.",
        "The group gasket was replaced in January 2026 after the portafilter started leaking at the 6 o'clock position.",
    ]),
    ("DF64 grinder", "Equipment", "coffee", "coffee-grinder", [
        "The DF64 grinder has SSP multipurpose burrs; espresso is around setting 12, filter around 55.",
        "Burr alignment was done with the marker test in December and fixed with two aluminium foil shims; the taste got noticeably cleaner.",
        "Retention is under 0.2 g with the bellows; the grinder is single-dosed with a RDT spray of water.",
    ]),
    ("home roasting", "Hobby", "coffee", "coffee-roasting", [
        "Ines roasts 120 g batches on a Kaffelogic Nano 7 with the Classic profile at level 2.4 for espresso.",
        "Development time ratio around 18% gave the best espresso; below 15% the shots tasted grassy.",
        "Roasted beans rest 7 days before espresso and 3 days before filter.",
        "The roaster runs on the balcony because the chaff and smoke set off the kitchen's smoke detector in November.",
    ]),
    ("green beans", "Topic", "coffee", "coffee-beans", [
        "Green beans come from a Porto importer in 5 kg bags; current lots are an Ethiopian Guji natural and a Colombian washed Huila.",
        "Green beans keep about a year in GrainPro bags in the dark pantry; the Guji lot is dated 2025-10.",
    ]),
    # ---------------------------------------------------------------- Japanese study (personal)
    ("Anki setup", "Tool", "japanese", "jp-anki", [
        "Ines studies Japanese with Anki: a core 2k/6k vocabulary deck and her own sentence-mining deck from Terrace House subtitles.",
        "FSRS is enabled with desired retention 0.88; reviews dropped from 220 to 150 a day after the switch.",
        "New cards are capped at 10 a day; a backlog over 300 reviews means no new cards until it is cleared.",
        "Sentence cards are made with Yomitan and the AnkiConnect add-on; audio comes from the Forvo plugin.",
    ]),
    ("kanji study", "Topic", "japanese", "jp-kanji", [
        "Kanji follow the WaniKani order; Ines reached level 27 in February 2026.",
        "She writes each new kanji by hand in a genkouyoushi notebook because recognition alone did not stick.",
        "Confusable pairs (待/持, 末/未) get their own Anki deck with both characters on the front.",
    ]),
    ("Japanese tutor", "Person", "japanese", "jp-tutor", [
        "Tutor Aiko Tanaka, on italki, Tuesdays and Fridays at 08:00 Lisbon time (16:00 in Osaka).",
        "Aiko corrects Ines's weekly diary entry before each lesson and focuses on keigo for work e-mails.",
        "Lessons cost 18 USD for 50 minutes; Ines buys packages of ten.",
    ]),
    ("JLPT N3", "Goal", "japanese", "jp-jlpt", [
        "Ines is registered for the JLPT N3 in July 2026 at the Lisbon test centre; registration closed in March.",
        "The weak section in mock exams is listening (19 of 60 on the last one); reading is 41 of 60.",
        "Study plan: Shin Kanzen Master N3 grammar one chapter a week, plus a timed mock exam every second Sunday.",
    ]),
    # ---------------------------------------------------------------- dotfiles / editor
    ("neovim config", "Config", "dotfiles", "nv-lsp", [
        "Neovim 0.11 with the built-in vim.lsp.config API; nvim-lspconfig was removed in March 2026.",
        "Language servers: gopls, kotlin-language-server, elixir-ls replaced by Expert in 2026, lua_ls and terraform-ls.",
        "Format on save runs through conform.nvim with gofumpt, ktlint and mix format; terraform fmt only on :Format to keep Atlantis diffs stable.",
        "elixir-ls ate 3 GB of RAM on cragbook after dialyzer started; dialyzer is disabled in the LSP and run in CI instead.",
    ]),
    ("lazy.nvim plugins", "Config", "dotfiles", "nv-plugins", [
        "Plugins are managed with lazy.nvim and the lockfile is committed; updates are a monthly :Lazy update in a dedicated commit.",
        "Telescope was swapped for fzf-lua because it was faster on the lindqvist-infra monorepo.",
        "Startup time is 38 ms with everything lazy-loaded by event or filetype; oil.nvim replaced the file tree.",
    ]),
    ("home-manager", "Tool", "dotfiles", "nv-nix", [
        "The dotfiles repo is a Nix flake with home-manager for both the Fedora workstation and the MacBook.",
        "Per-machine differences live in hosts/fedora.nix and hosts/macbook.nix; the shared modules must build on both systems.",
        "A flake update once broke kotlin-language-server on macOS; the nixpkgs input is now pinned to the release branch and updated every two weeks.",
    ]),
    ("terminal setup", "Config", "dotfiles", "nv-terminal", [
        "The terminal is WezTerm with the Berkeley Mono font at 13 pt and a Lua config shared through the flake.",
        "WezTerm multiplexing replaced tmux on the workstation; on servers she still uses tmux with a two-line status bar.",
        "Ligatures are off in WezTerm because they hid the difference between != and ≠ in Kotlin code review.",
    ]),
    # ---------------------------------------------------------------- apartment renovation
    ("apartment renovation", "Project", "renovation", "reno-contractors", [
        "Ines is renovating her 1950s flat in Campo de Ourique: new kitchen, rewiring, and opening the wall between kitchen and living room.",
        "Builder Construções Vasco & Filhos won the job with a quote of 38,500 EUR; two other quotes were 44,000 and 51,200.",
        "Payments are in four milestones tied to finished stages; the last 10% is held until the snag list is closed.",
        "2025-12-10: planned start date is 2026-02-02.",
        "2026-01-28: the start moved to 2026-03-02 because the kitchen worktops were delayed.",
    ]),
    ("electrical rewiring", "Task", "renovation", "reno-electrical", [
        "The flat still had the original cloth-insulated wiring and no earth on the bedroom sockets.",
        "The new panel has an RCD of 30 mA per circuit group and a separate 32 A circuit for the induction hob.",
        "The electrician must issue the certificate of inspection (CERTIEL) before the utility raises the contracted power to 6.9 kVA.",
        "Ethernet runs to the office and the living room are laid in the same chases as the power cables, in separate conduits.",
    ]),
    ("kitchen design", "Task", "renovation", "reno-kitchen", [
        "The kitchen is an L shape with a 3 m run of quartz worktop and an island where the wall used to be.",
        "The wall between kitchen and living room is load-bearing; the engineer specified a steel beam HEB 160.",
        "Appliances: induction hob with downdraft extractor, because the building has no duct to the roof.",
        "Cabinets come from a carpenter in Paços de Ferreira, in lacquered MDF with oak handles.",
    ]),
    ("building permit", "Process", "renovation", "reno-permits", [
        "Removing the load-bearing wall needs a prior communication (comunicação prévia) to the Câmara Municipal de Lisboa with the engineer's stability report.",
        "The condominium assembly approved the works on 2025-11-22, with quiet hours from 13:00 to 14:00 and no works on Saturdays.",
        "The building is in a protected area, so windows facing the street cannot change colour or material.",
    ]),
    # ---------------------------------------------------------------- home automation
    ("Home Assistant", "Software", "homeauto", "ha-hardware", [
        "Home Assistant OS runs on a Home Assistant Green in the hallway cabinet; backups go nightly to a Samba share on the NAS.",
        "A Sonoff ZBDongle-E on a USB extension cable is the Zigbee coordinator, moved away from the Green after interference from its USB 3 port.",
        "The NAS is a Synology DS220+ that also stores the photo library; Home Assistant reaches it over SMB 3.",
    ]),
    ("zigbee network", "Topic", "homeauto", "ha-zigbee", [
        "Zigbee devices are paired through Zigbee2MQTT, which publishes to the Mosquitto add-on inside Home Assistant.",
        "IKEA Tradfri bulbs are the mains-powered routers; the Aqara door sensors drop off when no router is within two rooms.",
        "Zigbee channel 25 avoids the Wi-Fi on channels 1 and 6; the switch from 11 needed re-pairing of 31 devices.",
    ]),
    ("solar and energy", "Topic", "homeauto", "ha-energy", [
        "The balcony solar kit is two 410 W panels with a micro-inverter; Home Assistant reads it over the local Hoymiles API.",
        "A Shelly Pro 3EM in the panel measures grid import and export; the energy dashboard shows 38% self-consumption in winter.",
        "The dishwasher starts through a smart plug when solar export exceeds 400 W for ten minutes.",
    ]),
    ("automations", "Config", "homeauto", "ha-automations", [
        "Automations are written in YAML in a git repo, not in the UI editor, and deployed with the Studio Code Server add-on.",
        "The hallway light turns on at 20% brightness between 23:00 and 07:00 when the motion sensor triggers.",
        "The heating automation reads the Lisbon weather forecast and preheats the flat only when the outside temperature drops below 10 °C.",
        "A broken automation looped the bathroom fan on and off every second; every automation now has mode: single and a condition on the last change.",
    ]),
]

RELATIONS = [
    ("DepartureBoard composable", "ferrypass", "part_of"),
    ("Viva Viagem card reader", "ferrypass", "part_of"),
    ("Calypso contract parsing", "Viva Viagem card reader", "used_by"),
    ("ferrypass Play Console", "ferrypass", "publishes"),
    ("ferrypass release checklist", "ferrypass Play Console", "governs"),
    ("timetable sync", "ferrypass", "part_of"),
    ("Mosquitto broker", "tidewatch", "feeds"),
    ("reading pipeline", "tidewatch", "part_of"),
    ("TimescaleDB", "tidewatch", "stores_for"),
    ("tidewatch backups", "TimescaleDB", "backs_up"),
    ("alert rules", "tidewatch", "part_of"),
    ("Professor Helena Matos", "tidewatch", "sponsors"),
    ("sensor calibration", "tidewatch", "maintains"),
    ("drift detection", "sensor calibration", "triggers"),
    ("lindqvist-infra repo", "Lindqvist Freight", "belongs_to"),
    ("Atlantis", "lindqvist-infra repo", "applies"),
    ("booking-api service", "Lindqvist Freight", "belongs_to"),
    ("ECS capacity", "booking-api service", "scales"),
    ("AWS IAM Identity Center", "Lindqvist Freight", "secures"),
    ("legacy SFTP user", "AWS IAM Identity Center", "exception_to"),
    ("AWS cost review", "Lindqvist Freight", "reports_to"),
    ("slot picker LiveView", "cragbook", "part_of"),
    ("cragbook schema", "cragbook", "part_of"),
    ("member import", "cragbook schema", "filled"),
    ("cragbook payments", "cragbook", "part_of"),
    ("cragbook e-mail", "cragbook", "part_of"),
    ("A2 pulley injury", "hangboard routine", "limits"),
    ("outdoor projects", "climbing trips", "related_to"),
    ("DF64 grinder", "Lelit Bianca", "feeds"),
    ("home roasting", "green beans", "uses"),
    ("kanji study", "Anki setup", "uses"),
    ("Japanese tutor", "JLPT N3", "prepares_for"),
    ("lazy.nvim plugins", "neovim config", "part_of"),
    ("home-manager", "neovim config", "deploys"),
    ("terminal setup", "home-manager", "managed_by"),
    ("electrical rewiring", "apartment renovation", "part_of"),
    ("kitchen design", "apartment renovation", "part_of"),
    ("building permit", "apartment renovation", "required_for"),
    ("zigbee network", "Home Assistant", "part_of"),
    ("solar and energy", "Home Assistant", "monitored_by"),
    ("automations", "Home Assistant", "part_of"),
    ("Mosquitto broker", "zigbee network", "same_software_as"),
]
