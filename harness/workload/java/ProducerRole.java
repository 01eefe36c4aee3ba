/*
 * kafka-chaos: the Java client worker's producer (Worker.java has the protocol): sends value_base + n at the
 * rate and records send, ack, send.error and a fatal client.error, as the librdkafka ProducerWorkload does.
 */
package kafkachaos;

import static kafkachaos.Worker.*;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

class ProducerRole {
    final String producerId;
    final String topic;
    final String acks;
    final double rate;
    final int keys;
    final long valueBase;
    final Properties props;
    final AtomicLong outstanding = new AtomicLong();
    volatile boolean fatal;
    /** The transaction the next record goes into (TxnProducerRole), or null: its records carry it as "txn". */
    volatile Long openTxn;
    /** The records go out from a fenced session kept alive (a zombie restart): they carry "zombie": true. */
    volatile boolean zombie;
    /** The input value the next record is made from (PipelineRole), or null: its records carry it as
     *  "input_value". */
    Long inputValue;

    ProducerRole(Properties all) {
        producerId = all.getProperty("worker.producer");
        topic = all.getProperty("worker.topic");
        acks = all.getProperty("worker.acks");
        rate = Double.parseDouble(all.getProperty("worker.rate"));
        keys = Integer.parseInt(all.getProperty("worker.keys", "0"));
        valueBase = Long.parseLong(all.getProperty("worker.value_base", "0"));
        props = known(clientProps(all), org.apache.kafka.clients.producer.ProducerConfig.configNames(), "producer");
    }

    Map<String, Object> write(String type, long value, String key, Long txn, boolean zombie, Long input) {
        Map<String, Object> m = event(type);
        m.put("producer", producerId);
        m.put("value", value);
        m.put("key", key);
        m.put("topic", topic);
        m.put("acks", acks);
        if (txn != null) m.put("txn", txn);
        if (zombie) m.put("zombie", true);
        if (input != null) m.put("input_value", input);
        return m;
    }

    KafkaProducer<byte[], byte[]> newProducer() {
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Paces sends at the rate; after a stall it resumes the rate instead of bursting. */
    static final class Pacer {
        final double interval;
        double nextAt = System.nanoTime();

        Pacer(double rate) {
            interval = 1.0e9 / rate;
        }

        /** Wait until the next send is due (up to 50 ms at a time: false when not yet). */
        boolean due() throws InterruptedException {
            long now = System.nanoTime();
            if (now < nextAt) {
                long waitNs = (long) Math.min(nextAt - now, 50_000_000L);
                Thread.sleep(waitNs / 1_000_000L, (int) (waitNs % 1_000_000L));
                return false;
            }
            nextAt += interval;
            if (now - nextAt > 1.0e9) nextAt = now;
            return true;
        }

        void restart() {
            nextAt = System.nanoTime();
        }
    }

    /** After sending has ended: report "drained" once no write is outstanding or the drain's deadline passed, and
     *  wait for close. */
    void drainThenWaitForClose() throws InterruptedException {
        while (!closing) {
            long deadline = drainDeadlineNs;
            if (deadline != 0 && (outstanding.get() == 0 || System.nanoTime() >= deadline)) {
                drainDeadlineNs = 0;
                Map<String, Object> m = ctl("drained");
                m.put("outstanding", outstanding.get());
                Out.line(m);
            }
            Thread.sleep(20);
        }
    }

    void run() throws Exception {
        KafkaProducer<byte[], byte[]> producer = newProducer();
        Out.line(ctl("ready"));
        Pacer pace = new Pacer(rate);
        long n = 0;
        while (!closing && !fatal && !stopped) {
            if (paused) {
                Thread.sleep(20);
                pace.restart();
            } else if (pace.due()) {
                sendOne(producer, n++, null);
            }
        }
        drainThenWaitForClose();
        producer.close(Duration.ZERO); // incomplete batches fail their callbacks: recorded, outcome unknown
    }

    /** Sends the n-th value (to `partition`, or where the partitioner puts it); returns false when send() threw. */
    boolean sendOne(KafkaProducer<byte[], byte[]> producer, long n, Integer partition) {
        long value = valueBase + n;
        String key = keys <= 0 ? null : "k" + (n % keys);
        Long txn = openTxn;
        boolean z = zombie;
        Long input = inputValue;
        Out.line(write("send", value, key, txn, z, input));
        long sentNs = System.nanoTime();
        outstanding.incrementAndGet();
        ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, partition, key == null ? null
            : key.getBytes(StandardCharsets.UTF_8), Long.toString(value).getBytes(StandardCharsets.UTF_8));
        try {
            producer.send(rec, (md, e) -> onDelivery(value, key, txn, z, input, sentNs, md, e));
            return true;
        } catch (KafkaException e) {
            outstanding.decrementAndGet();
            // send() threw: the record was never enqueued, so it certainly was not written
            error(value, key, txn, z, input, e, null, null, true);
            if (isFatal(e) && !z) onFatal(e);
            return false;
        }
    }

    void onDelivery(long value, String key, Long txn, boolean z, Long input, long sentNs, RecordMetadata md,
                    Exception e) {
        double latencyMs = Math.round((System.nanoTime() - sentNs) / 1000.0) / 1000.0;
        try {
            if (e == null) {
                Map<String, Object> m = write("ack", value, key, txn, z, input);
                m.put("partition", md.partition());
                m.put("offset", md.hasOffset() ? md.offset() : null);
                m.put("latency_ms", latencyMs);
                Out.line(m);
                return;
            }
            Integer partition = md != null && md.partition() >= 0 ? md.partition() : null;
            // from a callback: an earlier transmission of the batch may have been written
            error(value, key, txn, z, input, e, partition, latencyMs, false);
            if (isFatal(e) && !z) onFatal(e); // a zombie's errors are its own outcome (txn.zombie)
        } finally {
            outstanding.decrementAndGet();
        }
    }

    void error(long value, String key, Long txn, boolean z, Long input, Throwable e, Integer partition,
               Double latencyMs, boolean definite) {
        Map<String, Object> m = write("send.error", value, key, txn, z, input);
        if (partition != null) m.put("partition", partition);
        if (latencyMs != null) m.put("latency_ms", latencyMs);
        m.put("error", errorName(e));
        m.put("error_detail", detail(e));
        m.put("retriable", e instanceof RetriableException);
        m.put("fatal", isFatal(e));
        m.put("definite", definite);
        Out.line(m);
    }

    /** The exceptions KafkaProducer.send's documentation calls fatal: the client can send no more. */
    static boolean isFatal(Throwable e) {
        return e instanceof ProducerFencedException || e instanceof OutOfOrderSequenceException
            || e instanceof AuthorizationException || e instanceof UnsupportedVersionException;
    }

    /** A fatal error of a write (any thread): a plain producer ends sending (`fatalEnd`). */
    void onFatal(Throwable e) {
        fatalEnd(e);
    }

    synchronized void fatalEnd(Throwable e) {
        if (fatal) return;
        fatal = true;
        Map<String, Object> m = event("client.error");
        m.put("client", "producer:" + producerId);
        m.put("error", errorName(e));
        m.put("error_detail", detail(e));
        m.put("fatal", true);
        Out.line(m);
    }
}
