#!/bin/sh
# Creates the stream worker's topics when missing, raises their partition counts to the configured
# ones and (re)applies their retention (the watch list, the cameras' settings and statuses:
# compaction). Idempotent: Compose runs it on every `up`, Kubernetes as a Job. It never lowers a
# partition count (Kafka cannot); note that raising one moves cameras to other partitions, so a
# camera's frames are only ordered again from that moment on. The compacted topics' partition
# counts are never changed once created (their keys would move, and an older record left on the
# old partition could win over a newer one): they are only warned about.
#
# Runs in the apache/kafka image (POSIX sh). Environment:
#   BOOTSTRAP_SERVERS                         required
#   COMMAND_CONFIG                            optional Java client properties file (SASL/TLS)
#   REPLICATION_FACTOR                        default 1
#   INPUT_TOPIC / OUTPUT_TOPIC / DLQ_TOPIC    default frames / plates / frames.dlq
#   SIGHTINGS_TOPIC / ALERTS_TOPIC            default sightings / alerts
#   STORE_DLQ_TOPIC                           default store.dlq (records the history store cannot write)
#   WATCHLIST_TOPIC                           default watchlist (compacted, always 1 partition)
#   CAMERAS_TOPIC                             default cameras (compacted; CAMERAS_PARTITIONS)
#   CAMERAS_PARTITIONS                        default 6: connector replicas share the cameras by
#                                             these partitions (= the connector's --cameras-partitions)
#   CAMERA_STATUS_TOPIC                       default camera-status (compacted; each camera's status)
#   CAMERA_STATUS_PARTITIONS                  default 3
#   NOTIFY_TARGETS_TOPIC                      default notify-targets (compacted, always 1 partition)
#   NOTIFY_DLQ_TOPIC                          default notify.dlq (1 partition, DLQ_RETENTION_MS)
#   NOTIFY_DELIVERIES_TOPIC                   default notify.deliveries (the delivery log the console
#                                             shows: 1 partition, DLQ_RETENTION_MS)
#   NOTIFY_TESTS_TOPIC                        default notify-tests (compacted, always 1 partition:
#                                             the console's "send a test" requests)
#   FRAMES_PARTITIONS / PLATES_PARTITIONS / DLQ_PARTITIONS                   default 6 / 6 / 1
#   SIGHTINGS_PARTITIONS / ALERTS_PARTITIONS / STORE_DLQ_PARTITIONS          default 6 / 6 / 1
#   FRAMES_RETENTION_MS / PLATES_RETENTION_MS / DLQ_RETENTION_MS             default 1 h / 7 d / 14 d
#   SIGHTINGS_RETENTION_MS / ALERTS_RETENTION_MS / STORE_DLQ_RETENTION_MS    default 7 d / 7 d / 14 d
#   FRAMES_RETENTION_BYTES / PLATES_RETENTION_BYTES / DLQ_RETENTION_BYTES    per partition, default
#   SIGHTINGS_RETENTION_BYTES / ALERTS_RETENTION_BYTES / STORE_DLQ_RETENTION_BYTES
#                                             1 GiB / 512 MiB / 256 MiB; 256 MiB / 256 MiB / 256 MiB
#   (the same as stream_worker/contracts/topics.py, which the local `stream-worker up` applies)
#   MAX_MESSAGE_BYTES                         default 10485760 (frames are whole JPEGs)
set -eu

: "${BOOTSTRAP_SERVERS:?set BOOTSTRAP_SERVERS to the Kafka bootstrap address}"
KAFKA_BIN=${KAFKA_BIN:-/opt/kafka/bin}
REPLICATION_FACTOR=${REPLICATION_FACTOR:-1}
MAX_MESSAGE_BYTES=${MAX_MESSAGE_BYTES:-10485760}

admin_options="--bootstrap-server $BOOTSTRAP_SERVERS"
if [ -n "${COMMAND_CONFIG:-}" ] && [ -f "$COMMAND_CONFIG" ]; then
  admin_options="$admin_options --command-config $COMMAND_CONFIG"
fi

# ensure NAME PARTITIONS CONFIGS RAISE [CREATE_OPTIONS...]: the topic exists with CONFIGS
# (key=value,...) applied and, when RAISE is `raise`, at least PARTITIONS partitions (`keep`: created
# with PARTITIONS, never changed after); CREATE_OPTIONS go to its creation only.
ensure() {
  name=$1 partitions=$2 configs=$3 mode=$4
  shift 4
  # shellcheck disable=SC2086 # admin_options is a list of words on purpose
  "$KAFKA_BIN/kafka-topics.sh" $admin_options --create --if-not-exists --topic "$name" \
    --partitions "$partitions" --replication-factor "$REPLICATION_FACTOR" "$@"
  # shellcheck disable=SC2086
  current=$("$KAFKA_BIN/kafka-topics.sh" $admin_options --describe --topic "$name" \
    | sed -n 's/.*PartitionCount: *\([0-9][0-9]*\).*/\1/p' | head -n 1)
  if [ -z "$current" ]; then
    echo "could not read the partition count of topic $name" >&2
    exit 1
  fi
  if [ "$mode" = keep ] && [ "$current" -ne "$partitions" ]; then
    echo "warning: compacted topic $name has $current partitions, not the configured $partitions; left as it is (see deploy/README.md to recreate it)" >&2
    partitions=$current
  elif [ "$current" -lt "$partitions" ]; then
    echo "raising $name from $current to $partitions partitions"
    # shellcheck disable=SC2086
    "$KAFKA_BIN/kafka-topics.sh" $admin_options --alter --topic "$name" --partitions "$partitions"
  elif [ "$current" -gt "$partitions" ]; then
    echo "warning: $name has $current partitions, more than the configured $partitions (Kafka cannot lower them)" >&2
  fi
  # shellcheck disable=SC2086
  "$KAFKA_BIN/kafka-configs.sh" $admin_options --alter --entity-type topics --entity-name "$name" \
    --add-config "$configs"
  echo "topic $name ready: $partitions partitions, $configs"
}

# ensure_topic NAME PARTITIONS RETENTION_MS RETENTION_BYTES: a topic whose records expire, by age
# or by size per partition, whichever comes first.
ensure_topic() {
  ensure "$1" "$2" "cleanup.policy=delete,retention.ms=$3,retention.bytes=$4,max.message.bytes=$MAX_MESSAGE_BYTES" raise
}

# ensure_compacted_topic NAME [PARTITIONS]: a compacted topic (the latest record of a key is kept),
# created with PARTITIONS (default 1) and never changed after: changing the count would move keys
# to other partitions, and an older record of a key left on its old partition could then win over
# the newer one.
ensure_compacted_topic() {
  ensure "$1" "${2:-1}" "cleanup.policy=compact,max.message.bytes=$MAX_MESSAGE_BYTES" keep \
    --config cleanup.policy=compact
}

# A table whose writer rewrites every key every few seconds (camera-status): compacted, and its
# records older than the retention deleted too, so its log stays short between compactions.
ensure_status_topic() {
  ensure "$1" "$2" "cleanup.policy=[compact,delete],retention.ms=$3,max.message.bytes=$MAX_MESSAGE_BYTES" keep \
    --config cleanup.policy=compact,delete
}

ensure_topic "${INPUT_TOPIC:-frames}" "${FRAMES_PARTITIONS:-6}" "${FRAMES_RETENTION_MS:-3600000}" \
  "${FRAMES_RETENTION_BYTES:-1073741824}"
ensure_topic "${OUTPUT_TOPIC:-plates}" "${PLATES_PARTITIONS:-6}" "${PLATES_RETENTION_MS:-604800000}" \
  "${PLATES_RETENTION_BYTES:-536870912}"
ensure_topic "${DLQ_TOPIC:-frames.dlq}" "${DLQ_PARTITIONS:-1}" "${DLQ_RETENTION_MS:-1209600000}" \
  "${DLQ_RETENTION_BYTES:-268435456}"
ensure_topic "${SIGHTINGS_TOPIC:-sightings}" "${SIGHTINGS_PARTITIONS:-6}" "${SIGHTINGS_RETENTION_MS:-604800000}" \
  "${SIGHTINGS_RETENTION_BYTES:-268435456}"
ensure_topic "${ALERTS_TOPIC:-alerts}" "${ALERTS_PARTITIONS:-6}" "${ALERTS_RETENTION_MS:-604800000}" \
  "${ALERTS_RETENTION_BYTES:-268435456}"
ensure_topic "${VISITS_TOPIC:-visits}" "${VISITS_PARTITIONS:-6}" "${VISITS_RETENTION_MS:-1209600000}" \
  "${VISITS_RETENTION_BYTES:-268435456}"
ensure_topic "${STORE_DLQ_TOPIC:-store.dlq}" "${STORE_DLQ_PARTITIONS:-1}" "${STORE_DLQ_RETENTION_MS:-1209600000}" \
  "${STORE_DLQ_RETENTION_BYTES:-268435456}"
ensure_compacted_topic "${WATCHLIST_TOPIC:-watchlist}"
# Partitioned: the connector's replicas share the cameras by these partitions (a consumer group).
ensure_compacted_topic "${CAMERAS_TOPIC:-cameras}" "${CAMERAS_PARTITIONS:-6}"
ensure_status_topic "${CAMERA_STATUS_TOPIC:-camera-status}" "${CAMERA_STATUS_PARTITIONS:-3}" \
  "${CAMERA_STATUS_RETENTION_MS:-3600000}"
ensure_compacted_topic "${NOTIFY_TARGETS_TOPIC:-notify-targets}"
ensure_topic "${NOTIFY_DLQ_TOPIC:-notify.dlq}" 1 "${DLQ_RETENTION_MS:-1209600000}" "${DLQ_RETENTION_BYTES:-268435456}"
ensure_topic "${NOTIFY_DELIVERIES_TOPIC:-notify.deliveries}" 1 "${DLQ_RETENTION_MS:-1209600000}" \
  "${DLQ_RETENTION_BYTES:-268435456}"
ensure_topic "${NOTIFY_REPLAYS_TOPIC:-notify.replays}" 1 "${DLQ_RETENTION_MS:-1209600000}" \
  "${DLQ_RETENTION_BYTES:-268435456}"
ensure_compacted_topic "${NOTIFY_TESTS_TOPIC:-notify-tests}"
ensure_compacted_topic "${NOTIFY_STATUS_TOPIC:-notify-status}"
ensure_compacted_topic "${CORRECTIONS_TOPIC:-corrections}"
