package io.github.airflowprovidereo.devstack.registry;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.inject.Singleton;

import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationValue;
import org.jboss.jandex.DotName;
import org.jboss.jandex.PrimitiveType;
import org.jboss.jandex.Type;

import io.apicurio.common.apps.config.DynamicConfigPropertyDef;
import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.SyntheticBeanBuildItem;
import io.quarkus.arc.processor.InjectionPointInfo;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;

/**
 * Publishes the application's dynamic configuration properties as a {@link DynamicConfigPropertyList} bean.
 *
 * <p>A dynamic property is an injection point annotated with both {@code @ConfigProperty} and
 * Apicurio's {@code @Dynamic}. Its definition carries the property name, the value type (the type
 * argument of a {@code Supplier<T>} or {@code Optional<T>} injection point, else the injected type),
 * the default value, and the label, description and required properties of {@code @Dynamic}. Each
 * property name appears once, in the order the injection points are found.
 */
public class DynamicConfigIndexSteps {

    private static final DotName CONFIG_PROPERTY =
            DotName.createSimple("org.eclipse.microprofile.config.inject.ConfigProperty");
    private static final DotName DYNAMIC = DotName.createSimple("io.apicurio.common.apps.config.Dynamic");
    private static final String UNCONFIGURED = "org.eclipse.microprofile.config.configproperty.unconfigureddvalue";

    private static final Map<PrimitiveType.Primitive, Class<?>> PRIMITIVES = Map.of(
            PrimitiveType.Primitive.BOOLEAN, Boolean.class, PrimitiveType.Primitive.INT, Integer.class,
            PrimitiveType.Primitive.LONG, Long.class, PrimitiveType.Primitive.DOUBLE, Double.class,
            PrimitiveType.Primitive.FLOAT, Float.class, PrimitiveType.Primitive.SHORT, Short.class,
            PrimitiveType.Primitive.BYTE, Byte.class, PrimitiveType.Primitive.CHAR, Character.class);

    @BuildStep
    @Record(ExecutionTime.STATIC_INIT)
    void dynamicProperties(DynamicConfigListRecorder recorder, BeanDiscoveryFinishedBuildItem beans,
            BuildProducer<SyntheticBeanBuildItem> syntheticBeans) {
        Map<String, DynamicConfigPropertyDef> byName = new LinkedHashMap<>();
        for (InjectionPointInfo point : beans.getInjectionPoints()) {
            AnnotationInstance configProperty = point.getRequiredQualifier(CONFIG_PROPERTY);
            AnnotationInstance dynamic = dynamicAnnotation(point);
            if (configProperty == null || dynamic == null) {
                continue;
            }
            String name = configProperty.value("name").asString();
            byName.computeIfAbsent(name, key -> definition(key, point, configProperty, dynamic));
        }
        List<DynamicConfigPropertyDef> definitions = new ArrayList<>(byName.values());
        syntheticBeans.produce(SyntheticBeanBuildItem.configure(DynamicConfigPropertyList.class)
                .scope(Singleton.class)
                .runtimeValue(recorder.propertyList(definitions))
                .unremovable()
                .done());
    }

    private static AnnotationInstance dynamicAnnotation(InjectionPointInfo point) {
        if (point.isField()) {
            return point.getTarget().asField().annotation(DYNAMIC);
        }
        for (AnnotationInstance annotation : point.getTarget().asMethod().annotations(DYNAMIC)) {
            if (annotation.target().kind() == org.jboss.jandex.AnnotationTarget.Kind.METHOD_PARAMETER
                    && annotation.target().asMethodParameter().position() == point.getPosition()) {
                return annotation;
            }
        }
        return null;
    }

    private static DynamicConfigPropertyDef definition(String name, InjectionPointInfo point,
            AnnotationInstance configProperty, AnnotationInstance dynamic) {
        AnnotationValue defaultValue = configProperty.value("defaultValue");
        String fallback = defaultValue == null || UNCONFIGURED.equals(defaultValue.asString())
                ? null : defaultValue.asString();
        DynamicConfigPropertyDef def = new DynamicConfigPropertyDef(name, valueType(point.getType()), fallback);
        def.setLabel(stringOrNull(dynamic.value("label")));
        def.setDescription(stringOrNull(dynamic.value("description")));
        AnnotationValue requires = dynamic.value("requires");
        def.setRequires(requires == null ? new String[0] : requires.asStringArray());
        return def;
    }

    private static Class<?> valueType(Type injected) {
        Type valueType = injected;
        if (injected.kind() == Type.Kind.PARAMETERIZED_TYPE && !injected.asParameterizedType().arguments().isEmpty()) {
            valueType = injected.asParameterizedType().arguments().get(0);
        }
        if (valueType.kind() == Type.Kind.PRIMITIVE) {
            return PRIMITIVES.get(valueType.asPrimitiveType().primitive());
        }
        String className = valueType.name().toString();
        try {
            return Class.forName(className, false, Thread.currentThread().getContextClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("dynamic config property of unknown type " + className, e);
        }
    }

    private static String stringOrNull(AnnotationValue value) {
        return value == null ? null : value.asString();
    }
}
