package testenv;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.SourceFunction;

/**
 * Unbounded job: a source emitting one number every 100 ms, keyed into 4
 * keys, each key counting its records in ValueState.  Runs until cancelled or
 * stopped, so savepoints (POST /jobs/:id/savepoints, /stop) have state to
 * write.  Optional argument: emit interval in milliseconds.
 */
public final class Ticker {
    private Ticker() {}

    /** Emits 0, 1, 2, ... with a pause; stops on cancel. */
    static final class Tick implements SourceFunction<Long> {
        private static final long serialVersionUID = 1L;
        private final long pauseMs;
        private volatile boolean running = true;

        Tick(long pauseMs) {
            this.pauseMs = pauseMs;
        }

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            long n = 0;
            while (running) {
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(n++);
                }
                Thread.sleep(pauseMs);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** Counts records per key in keyed state. */
    static final class Count extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> seen;

        @Override
        public void open(Configuration parameters) {
            seen = getRuntimeContext().getState(new ValueStateDescriptor<>("seen", Types.LONG));
        }

        @Override
        public Long map(Long value) throws Exception {
            Long c = seen.value();
            long next = (c == null ? 0 : c) + 1;
            seen.update(next);
            return next;
        }
    }

    public static void main(String[] args) throws Exception {
        long pause = args.length > 0 ? Long.parseLong(args[0]) : 100L;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.addSource(new Tick(pause), "ticks").returns(Types.LONG)
                .keyBy(v -> v % 4).map(new Count()).returns(Types.LONG)
                .addSink(new DiscardingSink<>());
        env.execute("testenv-ticker");
    }
}
