/*
 * kafka-chaos: the Java client worker's consumer-group member (Worker.java has the protocol): polls, records
 * poll, assign, revoke, commit, commit.error and consumer.error, and answers the drain's caught-up question.
 */
package kafkachaos;

import static kafkachaos.Worker.*;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

final class MemberRole implements ConsumerRebalanceListener {
    final String consumerId;
    final String group;
    final List<String> topics;
    final String commit;
    final String isolation;
    final boolean incremental;
    final long commitIntervalNs;
    final Properties props;
    KafkaConsumer<byte[], byte[]> consumer;
    Admin side;
    volatile String memberId;
    volatile Integer generation;
    final Set<TopicPartition> assignment = new HashSet<>();
    final Map<TopicPartition, Long> positions = new HashMap<>();
    boolean dirty;
    boolean recorded;
    Integer lastGeneration;

    MemberRole(Properties all) {
        consumerId = all.getProperty("worker.consumer");
        group = all.getProperty("worker.group");
        topics = Arrays.asList(all.getProperty("worker.topics").split(","));
        commit = all.getProperty("worker.commit");
        incremental = Boolean.parseBoolean(all.getProperty("worker.incremental"));
        commitIntervalNs = (long) (Double.parseDouble(all.getProperty("worker.commit_interval_s", "1")) * 1e9);
        props = known(clientProps(all), org.apache.kafka.clients.consumer.ConsumerConfig.configNames(), "consumer");
        isolation = props.getProperty("isolation.level", "read_committed");
        props.setProperty("interceptor.classes", CommitRecorder.class.getName());
    }

    Map<String, Object> memberEvent(String type) {
        Map<String, Object> m = event(type);
        m.put("consumer", consumerId);
        m.put("group", group);
        m.put("member", memberId);
        return m;
    }

    void refresh() {
        try {
            ConsumerGroupMetadata md = consumer.groupMetadata();
            generation = md.generationId() < 0 ? null : md.generationId();
            String id = md.memberId();
            if (id != null && !id.isEmpty()) memberId = id;
        } catch (RuntimeException e) {
            // not available (closing): keep the last values seen
        }
    }

    void run() throws Exception {
        consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        CommitRecorder.member = this;
        consumer.subscribe(topics, this);
        Out.line(ctl("ready"));
        long lastCommit = System.nanoTime();
        long lastDrainCheck = 0;
        while (!closing) {
            if (paused) {
                Thread.sleep(50);
                continue;
            }
            refresh();
            try {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> r : records) polled(r);
            } catch (WakeupException e) {
                continue;
            } catch (KafkaException e) {
                Map<String, Object> m = memberEvent("consumer.error");
                m.put("error", errorName(e));
                m.put("error_detail", detail(e));
                m.put("fatal", !(e instanceof RetriableException));
                Out.line(m);
                Thread.sleep(100);
            }
            long now = System.nanoTime();
            if (("sync".equals(commit) || "async".equals(commit)) && dirty && now - lastCommit >= commitIntervalNs) {
                lastCommit = now;
                doCommit();
            }
            if (draining && now - lastDrainCheck >= 500_000_000L) {
                lastDrainCheck = now;
                drainCheck();
            }
        }
        consumer.close(Duration.ofSeconds(5)); // revoke callbacks, the final auto-commit, LeaveGroup
        if (side != null) side.close(Duration.ofSeconds(5));
    }

    void polled(ConsumerRecord<byte[], byte[]> r) {
        Map<String, Object> m = memberEvent("poll");
        m.put("topic", r.topic());
        m.put("partition", r.partition());
        m.put("offset", r.offset());
        m.put("value", decodeValue(r.value()));
        m.put("key", r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8));
        m.put("isolation", isolation);
        Out.line(m);
        positions.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
        dirty = true;
    }

    void doCommit() {
        dirty = false;
        Integer gen = generation;
        if ("async".equals(commit)) {
            consumer.commitAsync((offsets, e) -> {
                if (e != null) commitError(gen, e, offsets);
            });
            return;
        }
        try {
            consumer.commitSync(); // a success is recorded by CommitRecorder.onCommit
        } catch (KafkaException e) {
            commitError(gen, e, null);
        }
    }

    void commitError(Integer gen, Exception e, Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Object> m = memberEvent("commit.error");
        m.put("generation", gen);
        m.put("error", errorName(e));
        m.put("error_detail", detail(e));
        if (offsets != null && !offsets.isEmpty()) {
            List<Object> parts = new ArrayList<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> o : offsets.entrySet()) {
                parts.add(Arrays.asList(o.getKey().topic(), o.getKey().partition(), o.getValue().offset()));
            }
            m.put("partitions", parts);
        }
        Out.line(m);
    }

    void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
        for (Map.Entry<TopicPartition, OffsetAndMetadata> o : offsets.entrySet()) {
            Map<String, Object> m = memberEvent("commit");
            m.put("generation", generation);
            m.put("topic", o.getKey().topic());
            m.put("partition", o.getKey().partition());
            m.put("offset", o.getValue().offset());
            Out.line(m);
        }
    }

    void rebalance(String type, Collection<TopicPartition> parts, boolean lost) {
        refresh();
        // The Java client calls onPartitionsAssigned at the end of every rebalance, "even if no new partitions
        // were assigned" (ConsumerRebalanceListener's javadoc); under KIP-848 that follows each revocation in
        // the member's current epoch. An empty assignment in an epoch already recorded says nothing new, and is
        // no new rebalance: it is not recorded.
        if ("assign".equals(type) && incremental && parts.isEmpty() && recorded
                && java.util.Objects.equals(generation, lastGeneration)) {
            return;
        }
        recorded = true;
        lastGeneration = generation;
        if ("assign".equals(type)) {
            if (!incremental) assignment.clear();
            assignment.addAll(parts);
        } else {
            assignment.removeAll(parts);
            for (TopicPartition tp : parts) positions.remove(tp);
        }
        Map<String, Object> m = memberEvent(type);
        m.put("generation", generation);
        m.put("partitions", sorted(parts));
        m.put("incremental", incremental);
        m.put("assignment", sorted(assignment));
        if (lost) m.put("lost", true);
        Out.line(m);
    }

    static List<Object> sorted(Collection<TopicPartition> parts) {
        TreeSet<String> seen = new TreeSet<>();
        List<TopicPartition> list = new ArrayList<>(parts);
        list.sort((a, b) -> a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition())
            : a.topic().compareTo(b.topic()));
        List<Object> out = new ArrayList<>();
        for (TopicPartition tp : list) {
            if (seen.add(tp.toString())) out.add(Arrays.asList(tp.topic(), tp.partition()));
        }
        return out;
    }

    @Override public void onPartitionsAssigned(Collection<TopicPartition> parts) {
        rebalance("assign", parts, false);
    }

    @Override public void onPartitionsRevoked(Collection<TopicPartition> parts) {
        // the Java client calls this with an empty set after every cooperative rebalance: not a revocation
        if (incremental && parts.isEmpty()) return;
        rebalance("revoke", parts, false);
    }

    @Override public void onPartitionsLost(Collection<TopicPartition> parts) {
        rebalance("revoke", parts, true);
    }

    /** Whether this member has read up to the end of every partition it owns (the drain's question). The
     *  end is the last stable offset under read_committed (ListOffsets answers it), the position is the
     *  client's own, past markers and aborted records. */
    void drainCheck() {
        Map<String, Object> m = ctl("drain");
        try {
            List<Object> known = new ArrayList<>();
            for (String t : topics) {
                List<PartitionInfo> infos = consumer.partitionsFor(t, Duration.ofSeconds(1));
                if (infos != null) for (PartitionInfo pi : infos) known.add(Arrays.asList(t, pi.partition()));
            }
            m.put("known", known);
            Set<TopicPartition> owned = new HashSet<>(assignment);
            Map<TopicPartition, Long> ends = ends(owned);
            String behind = null;
            for (TopicPartition tp : owned) {
                long end = ends.getOrDefault(tp, -1L);
                long pos = consumer.position(tp, Duration.ofSeconds(1));
                if (end < 0 || pos < end) {
                    behind = tp + ": read up to " + pos + ", end " + end;
                    break;
                }
            }
            m.put("caught_up", behind == null);
            m.put("detail", behind);
        } catch (KafkaException | java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            m.put("caught_up", false);
            m.put("detail", detail(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            m.put("caught_up", false);
            m.put("detail", "interrupted");
        }
        Out.line(m);
    }

    /** The leaders' ends of `owned` at this member's isolation level, asked on connections of the drain check's own
     *  (an Admin with the member's settings that an Admin knows): the consumer's `endOffsets` goes out on the
     *  consumer's connections, where a broker answers one request at a time, so with a long fetch.max.wait.ms it
     *  waits behind the Fetch the broker holds (librdkafka's did: docs/apache-kafka.md, "A batch consumer's own
     *  requests wait behind its Fetch"; the Python members ask on `workload/ends.SideChannel`). */
    Map<TopicPartition, Long> ends(Set<TopicPartition> owned)
            throws java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException,
            InterruptedException {
        if (side == null) {
            Properties p = new Properties();
            for (String k : props.stringPropertyNames())
                if (AdminClientConfig.configNames().contains(k)) p.setProperty(k, props.getProperty(k));
            p.remove("client.id");
            side = Admin.create(p);
        }
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (TopicPartition tp : owned) latest.put(tp, OffsetSpec.latest());
        IsolationLevel level = "read_uncommitted".equals(isolation)
            ? IsolationLevel.READ_UNCOMMITTED : IsolationLevel.READ_COMMITTED;
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> got = side.listOffsets(
            latest, new ListOffsetsOptions(level)).all().get(1, TimeUnit.SECONDS);
        Map<TopicPartition, Long> out = new HashMap<>();
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : got.entrySet())
            out.put(e.getKey(), e.getValue().offset());
        return out;
    }
}
