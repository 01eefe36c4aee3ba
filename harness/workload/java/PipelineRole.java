/*
 * kafka-chaos: the Java client worker's read-process-write pipeline (Worker.java has the protocol): the librdkafka
 * PipelineWorkload's loop (harness/workload/pipeline.py) on the Java client. A consumer (read_committed, no
 * auto-commit, at most `records` records a poll) reads the input as the pipeline's group; each poll's records go into
 * one transaction as one output record each (input partition p to output partition p mod the output's count, with
 * input_value), and the consumed positions are committed in that transaction (sendOffsetsToTransaction with the
 * consumer's group metadata, KIP-447). Events: pipe.read per input record, send/ack/send.error with input_value,
 * txn.begin, txn.commit with offsets. A transaction that does not commit rewinds the consumer to the group's
 * committed offsets, so its input is read again; so does a new session after a fence, whose new consumer starts from
 * them.
 */
package kafkachaos;

import static kafkachaos.Worker.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

final class PipelineRole extends TxnProducerRole {
    final String group;
    final String inputTopic;
    final Properties consumerProps = new Properties();
    List<Object> offsets;

    PipelineRole(Properties all) {
        super(all);
        group = all.getProperty("worker.group");
        inputTopic = all.getProperty("worker.input");
        for (String k : all.stringPropertyNames()) {
            if (k.startsWith("consumer.")) consumerProps.setProperty(k.substring("consumer.".length()), all.getProperty(k));
        }
        known(consumerProps, org.apache.kafka.clients.consumer.ConsumerConfig.configNames(), "consumer");
    }

    long n;

    @Override
    void run() throws Exception {
        Out.line(ctl("ready"));
        while (!closing && !fatal && !stopped) {
            KafkaProducer<byte[], byte[]> producer = newProducer();
            KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(consumerProps, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            fenceSeen = null;
            fenceRecorded = false;
            try {
                consumer.subscribe(Collections.singletonList(inputTopic));
                if (!init(producer)) break;
                int partitions = partitionCount(producer);
                while (!stopped && !closing) {
                    checkSession();
                    ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(200));
                    if (batch.isEmpty()) continue;
                    if (!oneTransaction(producer, consumer, batch, partitions)) break; // a new session reads on
                }
            } catch (SessionEnded ended) {
                inputValue = null;
                offsets = null;
                sessionEnded(ended);
            } finally {
                producer.close(Duration.ZERO);
                consumer.close(Duration.ZERO);
            }
        }
        drainThenWaitForClose();
    }

    /** One batch in one transaction; false when the rewind after a failed one could not learn the committed
     *  offsets (the group's coordinator moving): the session is given up and a new one starts from them. */
    boolean oneTransaction(KafkaProducer<byte[], byte[]> producer, KafkaConsumer<byte[], byte[]> consumer,
                           ConsumerRecords<byte[], byte[]> batch, int partitions) throws SessionEnded {
        begin(producer);
        openAbort = false; // a pipeline aborts only what fails
        long txn = openTxn;
        for (ConsumerRecord<byte[], byte[]> r : batch) {
            Object value = decodeValue(r.value());
            Map<String, Object> m = event("pipe.read");
            m.put("pipeline", producerId);
            m.put("group", group);
            m.put("topic", r.topic());
            m.put("partition", r.partition());
            m.put("offset", r.offset());
            m.put("value", value);
            m.put("txn", txn);
            Out.line(m);
            inputValue = value instanceof Long ? (Long) value : null;
            sendOne(producer, n++, partitions > 0 ? r.partition() % partitions : null);
        }
        inputValue = null;
        Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
        List<Object> listed = new ArrayList<>();
        for (TopicPartition tp : consumer.assignment()) {
            long position = consumer.position(tp);
            positions.put(tp, new OffsetAndMetadata(position));
            listed.add(Arrays.asList(tp.topic(), tp.partition(), position));
        }
        offsets = listed;
        try {
            producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
        } catch (KafkaException e) {
            SessionEnded ended = classify(e);
            if (ended.fence || isFatal(ended.cause)) throw ended;
            openAbort = true; // it cannot commit: abort it, and read the batch again
        }
        boolean committed = "committed".equals(end(producer));
        offsets = null;
        return committed || rewind(consumer);
    }

    /** Seek every assigned partition back to the group's committed offset (the start, if none); false when the
     *  committed offsets could not be read within 10 s. */
    boolean rewind(KafkaConsumer<byte[], byte[]> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed;
        try {
            committed = consumer.committed(assigned, Duration.ofSeconds(10));
        } catch (KafkaException e) {
            return false;
        }
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata at = committed.get(tp);
            if (at == null) consumer.seekToBeginning(Collections.singletonList(tp));
            else consumer.seek(tp, at.offset());
        }
        return true;
    }

    @Override
    List<Object> endOffsets() {
        return offsets;
    }
}
