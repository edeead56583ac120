import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Enumeration;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Prints every Flink configuration key the given jars declare, one per line, sorted:
 * "KEY<TAB>key CLASS" for a ConfigOption's own key, "KEY<TAB>deprecated-of|fallback-of OPTION"
 * for its fallback keys.  Run with the jars (and their dependencies) on the classpath; the
 * arguments are the jars to scan (their org.apache.flink classes, static ConfigOption fields).
 * Classes that do not load without optional dependencies are skipped.  Used by
 * config-keys.sh to compare two Flink versions (policies/lib/flinkremoved.lua).
 */
public final class ListConfigKeys {
    private ListConfigKeys() {}

    public static void main(String[] a) throws Exception {
        Class<?> co = Class.forName("org.apache.flink.configuration.ConfigOption");
        Method key = co.getMethod("key");
        Method fb = co.getMethod("fallbackKeys");
        Class<?> fk = Class.forName("org.apache.flink.configuration.FallbackKey");
        Method fkKey = fk.getMethod("getKey");
        Method fkDep = fk.getMethod("isDeprecated");
        TreeMap<String, String> out = new TreeMap<>();
        for (String jar : a) {
            try (JarFile j = new JarFile(jar)) {
                for (Enumeration<JarEntry> e = j.entries(); e.hasMoreElements();) {
                    String n = e.nextElement().getName();
                    if (!n.endsWith(".class") || !n.startsWith("org/apache/flink/") || n.contains("shaded")) continue;
                    String cn = n.substring(0, n.length() - 6).replace('/', '.');
                    Class<?> c;
                    try { c = Class.forName(cn, false, ListConfigKeys.class.getClassLoader()); } catch (Throwable t) { continue; }
                    Field[] fs;
                    try { fs = c.getDeclaredFields(); } catch (Throwable t) { continue; }
                    for (Field f : fs) {
                        if (!Modifier.isStatic(f.getModifiers()) || !co.isAssignableFrom(f.getType())) continue;
                        try {
                            f.setAccessible(true);
                            Object o = f.get(null);
                            if (o == null) continue;
                            out.put((String) key.invoke(o), "key " + cn);
                            for (Object k : (Iterable<?>) fb.invoke(o)) {
                                String kk = (String) fkKey.invoke(k);
                                out.putIfAbsent(kk, ((Boolean) fkDep.invoke(k) ? "deprecated-of " : "fallback-of ") + key.invoke(o));
                            }
                        } catch (Throwable t) { }
                    }
                }
            }
        }
        for (Map.Entry<String, String> e : out.entrySet()) System.out.println(e.getKey() + "\t" + e.getValue());
    }
}
