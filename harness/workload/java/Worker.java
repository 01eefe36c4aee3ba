/*
 * kafka-chaos: the Java client worker. One process drives one Java client (org.apache.kafka:kafka-clients) of the
 * version on its classpath: a producer (ProducerRole), a transactional producer (TxnProducerRole), a
 * read-process-write pipeline (PipelineRole), or one member of a consumer group (MemberRole). It writes the history's own events (harness/history/events_client.py: send, ack,
 * send.error, client.error, txn.begin, txn.commit, txn.abort, txn.fenced, txn.zombie, pipe.read, poll, assign, revoke, commit,
 * commit.error, consumer.error) to stdout, one JSON object per line, each stamped with System.nanoTime()
 * ("mono_ns": CLOCK_MONOTONIC on Linux, the clock of the harness's history), and control lines
 * ({"ctl": ...}). It reads commands from stdin, one per line: pause, resume, stop (a producer sends no more),
 * drain <ms> (a producer waits that long for its outstanding acks, then says "drained"), draining on|off (a member
 * reports whether it has caught up), hold and zombie <first value> (a transactional producer keeps its transaction
 * open, says "held", and on "zombie" writes values from <first value> on into it and tries to commit, after a new
 * session fenced it), close.
 * End of stdin (the harness is gone) halts the process at once.
 *
 * Only APIs of kafka-clients 2.8 and later are used, so the sources build against every client version
 * (harness/install/java_client.py compiles them once per version). The harness's Python side
 * (harness/workload/worker.py) turns the lines into typed events; nothing here is a second definition of an event:
 * the field names are the history's.
 *
 * Usage: java -cp <classes>:<kafka-clients and its dependencies> kafkachaos.Worker
 *   stdin starts with the settings, java.util.Properties text ended by a line "--end-of-settings--" (never on the
 *   command line: a secured cluster's credentials are among them): worker.role=producer|member, the worker.*
 *   settings read below, and client.<name>=<value>, handed to the client as <name>=<value>.
 */

package kafkachaos;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.common.protocol.Errors;

public final class Worker {
    private Worker() {}

    // -- output: one JSON object per line, flushed within 5 ms ----------------------------------------------------
    static final class Out {
        private static final OutputStream OUT = new BufferedOutputStream(System.out, 1 << 16);
        private static boolean dirty;

        static synchronized void line(Map<String, Object> record) {
            StringBuilder sb = new StringBuilder(256);
            json(sb, record);
            sb.append('\n');
            try {
                OUT.write(sb.toString().getBytes(StandardCharsets.UTF_8));
                dirty = true;
            } catch (IOException e) {
                Runtime.getRuntime().halt(3); // the harness is gone
            }
        }

        static synchronized void flush() {
            if (!dirty) return;
            try {
                OUT.flush();
                dirty = false;
            } catch (IOException e) {
                Runtime.getRuntime().halt(3);
            }
        }

        static void startFlusher() {
            Thread t = new Thread(() -> {
                while (true) {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                    flush();
                }
            }, "kafka-chaos-flush");
            t.setDaemon(true);
            t.start();
        }

        static void json(StringBuilder sb, Object v) {
            if (v == null) {
                sb.append("null");
            } else if (v instanceof String) {
                String s = (String) v;
                sb.append('"');
                for (int i = 0; i < s.length(); i++) {
                    char c = s.charAt(i);
                    if (c == '"' || c == '\\') sb.append('\\').append(c);
                    else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
                sb.append('"');
            } else if (v instanceof Number || v instanceof Boolean) {
                sb.append(v);
            } else if (v instanceof Map) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first) sb.append(',');
                    first = false;
                    json(sb, String.valueOf(e.getKey()));
                    sb.append(':');
                    json(sb, e.getValue());
                }
                sb.append('}');
            } else if (v instanceof Collection) {
                sb.append('[');
                boolean first = true;
                for (Object o : (Collection<?>) v) {
                    if (!first) sb.append(',');
                    first = false;
                    json(sb, o);
                }
                sb.append(']');
            } else {
                json(sb, v.toString());
            }
        }
    }

    static Map<String, Object> event(String type) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        m.put("mono_ns", System.nanoTime());
        return m;
    }

    static Map<String, Object> ctl(String what) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ctl", what);
        m.put("mono_ns", System.nanoTime());
        return m;
    }

    /** Kafka's error name for an exception (Errors.forException), or its class name when Kafka has none. */
    static String errorName(Throwable e) {
        Errors err = Errors.forException(e);
        return err == Errors.UNKNOWN_SERVER_ERROR ? e.getClass().getSimpleName() : err.name();
    }

    static String detail(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getName() + (m == null ? "" : ": " + m);
    }

    static Object decodeValue(byte[] raw) {
        if (raw == null) return null;
        String s = new String(raw, StandardCharsets.UTF_8);
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return s;
        }
    }

    static final String END_OF_SETTINGS = "--end-of-settings--";

    // -- commands from the harness --------------------------------------------------------------------------------
    static volatile boolean paused;
    static volatile boolean closing;
    static volatile boolean stopped;
    static volatile boolean holding;
    static volatile boolean zombieGo;
    static volatile long zombieBase;
    static volatile boolean draining;
    static volatile long drainDeadlineNs;

    static void readCommands(BufferedReader in) {
        Thread t = new Thread(() -> {
            try {
                String line;
                while ((line = in.readLine()) != null) {
                    String[] w = line.trim().split(" ");
                    switch (w[0]) {
                        case "pause": paused = true; break;
                        case "resume": paused = false; break;
                        case "draining": draining = w.length > 1 && w[1].equals("on"); break;
                        case "drain":
                            drainDeadlineNs = System.nanoTime() + Long.parseLong(w[1]) * 1_000_000L;
                            draining = true;
                            break;
                        case "stop": stopped = true; break;
                        case "hold": holding = true; break;
                        case "zombie":
                            zombieBase = Long.parseLong(w[1]);
                            zombieGo = true;
                            break;
                        case "close":
                            closing = true;
                            stopped = true;
                            paused = false;
                            closeWatchdog();
                            break;
                        default: break;
                    }
                }
            } catch (IOException | RuntimeException e) {
                // fall through: no harness
            }
            Out.flush();
            Runtime.getRuntime().halt(2); // stdin closed: the harness is gone, nothing may outlive it
        }, "kafka-chaos-commands");
        t.setDaemon(true);
        t.start();
    }

    static final long CLOSE_GRACE_MS = 10_000;

    /** A close that the client cannot serve in time (the sending thread blocked in send(), which waits up to
     *  max.block.ms for metadata no broker gives) ends the worker anyway: what it had in flight stays unresolved,
     *  unknown, as librdkafka's purge at close leaves it. */
    static void closeWatchdog() {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(CLOSE_GRACE_MS);
            } catch (InterruptedException e) {
                return;
            }
            Map<String, Object> m = ctl("closed");
            m.put("forced", true);
            Out.line(m);
            Out.flush();
            Runtime.getRuntime().halt(0);
        }, "kafka-chaos-close-watchdog");
        t.setDaemon(true);
        t.start();
    }

    /** `props` when the Java client knows every name in it; else the worker fails at start, naming the unknown ones
     *  (the Java client would only log them and go on without them: a setting the experiment asked for would
     *  silently not apply). */
    static Properties known(Properties props, java.util.Set<String> names, String what) {
        java.util.List<String> unknown = new java.util.ArrayList<>();
        for (String k : props.stringPropertyNames()) {
            if (!names.contains(k)) unknown.add(k);
        }
        if (!unknown.isEmpty()) {
            java.util.Collections.sort(unknown);
            throw new IllegalArgumentException("the Java " + what + " client has no setting named " + unknown
                + " (a librdkafka name? the Java client's names are in its " + what + " configs' documentation)");
        }
        return props;
    }

    static Properties clientProps(Properties all) {
        Properties p = new Properties();
        for (String k : all.stringPropertyNames()) {
            if (k.startsWith("client.")) p.setProperty(k.substring("client.".length()), all.getProperty(k));
        }
        return p;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder text = new StringBuilder();
        for (String line = in.readLine(); line != null && !line.equals(END_OF_SETTINGS); line = in.readLine()) {
            text.append(line).append('\n');
        }
        Properties all = new Properties();
        all.load(new StringReader(text.toString()));
        Out.startFlusher();
        readCommands(in);
        int rc = 0;
        try {
            String role = all.getProperty("worker.role");
            if ("producer".equals(role)) new ProducerRole(all).run();
            else if ("txn_producer".equals(role)) new TxnProducerRole(all).run();
            else if ("pipeline".equals(role)) new PipelineRole(all).run();
            else if ("member".equals(role)) new MemberRole(all).run();
            else throw new IllegalArgumentException("worker.role must be producer, txn_producer, pipeline or member, not " + role);
            Out.line(ctl("closed"));
        } catch (Throwable e) {
            Map<String, Object> m = ctl("failed");
            m.put("error", detail(e));
            Out.line(m);
            e.printStackTrace();
            rc = 1;
        }
        Out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(rc);
    }
}
